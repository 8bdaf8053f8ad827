"""Job event streams, driven by the store's watch (never a loop of reads): one job's history and then each
transition as it happens, or the changes of a filtered listing, one message per store revision.

A message's ``id`` is its revision: a client that resumes after it (``since``) gets exactly what followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from federation import keys
from federation.models import JobRecord
from federation.sse import Message
from federation.store import CompactedError, Store, WatchEvent


class TooManyWatches(Exception):
    """A caller already holds as many open streams as a tenant may on this replica."""


class WatchLimiter:
    """Open streams per caller on this replica, at most ``limit`` each, so one tenant's streams (each a
    store watch and a connection) cannot exhaust the server."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: Counter[str] = Counter()

    def take(self, who: str) -> Callable[[], None]:
        """One of ``who``'s slots (``TooManyWatches`` past the limit); what it returns gives it back."""
        if self._open[who] >= self.limit:
            raise TooManyWatches(
                f"{who!r} has {self._open[who]} event streams open on this server, the most allowed "
                "(api.maxWatchesPerTenant): close one, or follow many jobs with one stream (GET /v1/jobs?watch=true)"
            )
        self._open[who] += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._open[who] -= 1
                if not self._open[who]:
                    del self._open[who]

        return release


def _job_key_range(job_id: str) -> tuple[str, str]:
    """Exactly the job's key (an array's elements share its id as a prefix)."""
    key = keys.job(job_id)
    return key, key + "\0"


async def job_history(store: Store, job_id: str) -> tuple[JobRecord, int] | None:
    """The job's record and the revision it was read at (what its stream resumes after), or None."""
    start, end = _job_key_range(job_id)
    snapshot = await store.snapshot(start, end=end)
    if not snapshot.kvs:
        return None
    return JobRecord.from_bytes(snapshot.kvs[0].value), snapshot.revision


def job_message(record: JobRecord, revision: int, seen: int = 0) -> Message:
    """The job's summary and the entries of its history after the first ``seen``."""
    events = [event.model_dump(mode="json", by_alias=True) for event in record.events[seen:]]
    return Message("job", {"revision": revision, "job": record.summary(), "events": events}, revision)


async def job_messages(store: Store, job_id: str, after: int, idle: float) -> AsyncIterator[Message | None]:
    """A message for each change of the job's history after revision ``after`` (None after ``idle``
    seconds without one: a keepalive is due); a ``removed`` message ends it when the record goes."""
    start, end = _job_key_range(job_id)
    async for batch in batches(store.watch(start, start_revision=after + 1, end=end), idle):
        if not batch:
            yield None
            continue
        for event in batch:
            if event.type == "delete" or event.kv is None:
                yield Message("removed", {"revision": event.revision, "id": job_id}, event.revision)
                return
            if event.prev is None and event.kv.version > 1:
                raise CompactedError(event.revision)  # etcd no longer has the version before: no diff to make
            seen = 0 if event.prev is None else len(json.loads(event.prev.value).get("events", []))
            record = JobRecord.from_bytes(event.kv.value)
            if len(record.events) > seen:
                yield job_message(record, event.revision, seen)


@dataclass(frozen=True)
class Listing:
    """The list API's filters (None: any); a tenant's stream always names its tenant."""

    state: str | None
    queue: str | None
    tenant: str | None

    @property
    def prefix(self) -> str:
        """The index range to watch: a state's (and the queue's subtree's: its name as a key prefix), so
        etcd filters by those; ``matches`` drops the queues that only share the name's start."""
        return keys.index_prefix(self.state) + (self.queue or "") if self.state is not None else keys.INDEX

    def matches(self, view: dict[str, Any]) -> bool:
        """The queue filter names a subtree: the queue itself and every queue under it."""
        queue = view["queue"]
        return (self.tenant is None or view["tenant"] == self.tenant) and (
            self.queue is None or queue == self.queue or queue.startswith(f"{self.queue}.")
        )

    def changes(self, batch: list[WatchEvent]) -> list[dict[str, Any]]:
        """One revision's index changes in this listing: ``put`` (a job entered it or changed in it) and
        ``delete`` (it left it: another state, or its record removed). A job's move within the listing is
        one ``put``, though its old index entry went in the same revision."""
        puts: dict[str, dict[str, Any]] = {}
        deletes: dict[str, dict[str, Any]] = {}
        for event in batch:
            if event.kv is None:
                continue  # a delete whose last value etcd no longer holds (compacted): whose job it was is unknown
            view = json.loads(event.kv.value)
            if self.matches(view):
                (puts if event.type == "put" else deletes)[view["id"]] = view
        left = [{"type": "delete", "job": view} for job_id, view in deletes.items() if job_id not in puts]
        return [*({"type": "put", "job": view} for view in puts.values()), *left]


def start_message(revision: int) -> Message:
    return Message("start", {"revision": revision}, revision)


async def listing_messages(store: Store, listing: Listing, after: int, idle: float) -> AsyncIterator[Message | None]:
    """A message for each revision after ``after`` that changed the listing (None after ``idle`` seconds
    without one: a keepalive is due)."""
    async for batch in batches(store.watch(listing.prefix, start_revision=after + 1), idle):
        if not batch:
            yield None
            continue
        changes = listing.changes(batch)
        if changes:
            revision = batch[0].revision
            yield Message("jobs", {"revision": revision, "changes": changes}, revision)


async def batches(events: AsyncGenerator[WatchEvent, None], idle: float) -> AsyncIterator[list[WatchEvent]]:
    """The watch's events a revision at a time, ``[]`` after ``idle`` seconds with none.

    A task reads the watch into a queue. Both stores hand over a revision's events without pausing
    between them (etcd sends a revision in one response, and the memory store appends a txn's at once),
    so when this side wakes up the revisions it finds queued are whole.
    """
    queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in events:
                queue.put_nowait(event)
        except Exception as exc:  # handed to the reader, which raises it
            queue.put_nowait(exc)
        else:
            queue.put_nowait(None)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                items = [await asyncio.wait_for(queue.get(), idle)]
            except TimeoutError:
                yield []
                continue
            while not queue.empty():
                items.append(queue.get_nowait())
            group: list[WatchEvent] = []
            for item in items:
                if isinstance(item, WatchEvent):
                    if group and item.revision != group[0].revision:
                        yield group
                        group = []
                    group.append(item)
                    continue
                if group:
                    yield group
                if item is None:
                    return
                raise item
            yield group
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
