"""What a reader of a job's logs gets: one run's lines filtered (task, stream, time, tail), and the
stream of new ones (``follow``) that goes on into the job's next run and ends with the job.

A stream's place is one integer, its cursor: the run's epoch and the byte offset in its journal
(``epoch << 40 | offset``), so a reconnect after the last message's id misses and repeats nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from federation import keys
from federation.joblogs.store import Entry, LogStore
from federation.models import JobRecord
from federation.sse import Message
from federation.store import Store

OFFSET_BITS = 40
POLL_EVERY = 0.5
"""Seconds between looks at a followed journal (another replica may be the one writing it)."""
SETTLE = 15.0
"""Seconds a stream waits, after its run ended, for the last lines of an agent that went quiet."""


def cursor(epoch: int, offset: int) -> int:
    return epoch << OFFSET_BITS | offset


def split_cursor(value: int) -> tuple[int, int]:
    return value >> OFFSET_BITS, value & ((1 << OFFSET_BITS) - 1)


@dataclass(frozen=True)
class LogFilter:
    """``task``: a task's name (every replica), its replica index, or both (``worker-3``)."""

    task: str | None = None
    stream: str | None = None
    newer_than: float | None = None  # a time: lines printed before it are left out

    def __call__(self, entry: Entry) -> bool:
        if self.stream is not None and entry.stream != self.stream:
            return False
        if self.newer_than is not None and entry.time < self.newer_than:
            return False
        if self.task is None:
            return True
        name, _, index = entry.task.rpartition("-")
        return self.task in (entry.task, name if not self.task.isdigit() else index)


def as_lines(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    return [{"time": e.time, "task": e.task, "stream": e.stream, "text": e.text} for e in entries]


def snapshot(logs: LogStore, job_id: str, epoch: int, keep: LogFilter, tail: int | None) -> dict[str, Any]:
    """The run's lines so far, by the time printed (each stream keeps its own order), the last ``tail``."""
    run = logs.state(job_id, epoch)
    entries, offset = logs.read(job_id, epoch)
    chosen = sorted((e for e in entries if keep(e)), key=lambda e: e.time)
    if tail is not None:
        chosen = chosen[-tail:] if tail else []
    return {
        "job": job_id,
        "epoch": epoch,
        "lines": as_lines(chosen),
        "cursor": cursor(epoch, offset),
        "cut": run is not None and run.cut,
        "complete": run is not None and run.complete,
    }


async def record_of(store: Store, job_id: str) -> JobRecord | None:
    kv = await store.get(keys.job(job_id))
    return None if kv is None else JobRecord.from_bytes(kv.value)


async def follow(
    store: Store,
    logs: LogStore,
    job_id: str,
    keep: LogFilter,
    start: int,
    now: Callable[[], float],
    keepalive_every: float,
) -> AsyncIterator[Message | None]:
    """``lines`` messages from cursor ``start`` on, None for a keepalive, then ``end`` once the job has
    ended and its last run's output is complete (or ``SETTLE`` seconds after, if it never is)."""
    epoch, offset = split_cursor(start)
    quiet = 0.0
    waiting_since: float | None = None
    while True:
        run = await asyncio.to_thread(logs.state, job_id, epoch)  # before the read: complete means all read
        entries, after = await asyncio.to_thread(logs.read, job_id, epoch, offset)
        if after != offset:
            offset = after
            chosen = [e for e in entries if keep(e)]
            if chosen:
                quiet = 0.0
                yield Message("lines", {"epoch": epoch, "lines": as_lines(chosen)}, cursor(epoch, offset))
        record = await record_of(store, job_id)
        if record is None:
            yield Message("end", {"epoch": epoch, "state": None}, cursor(epoch, offset))
            return
        moved_on = record.epoch > epoch
        done = run.complete if run is not None else (moved_on or epoch == 0)  # epoch 0: it never ran
        if moved_on or record.state.terminal:
            waiting_since = now() if waiting_since is None else waiting_since
            settled = done or now() - waiting_since >= SETTLE
            if settled and moved_on:
                epoch, offset, waiting_since = record.epoch, 0, None
                continue
            if settled:
                yield Message("end", {"epoch": epoch, "state": record.state.value}, cursor(epoch, offset))
                return
        await asyncio.sleep(POLL_EVERY)
        quiet += POLL_EVERY
        if quiet >= keepalive_every:
            quiet = 0.0
            yield None
