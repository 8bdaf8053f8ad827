"""Jobs per index range (a state, or a state and a queue), kept by each API replica from a watch of the
job index, so the queue view and ``explain`` cost the ranges they ask for, not the jobs in them: etcd
3.5 walks every key it counts (etcd-io/etcd#16510), so a count by the store costs every unfinished job
(``GET /v1/queues`` took 410 ms at 1,000,000 jobs, issue 35).

A range is counted by the store once, the first time it is asked for, and each change of the index after
the revision of that count moves it: a put that creates a key adds one, a delete takes one (a put that
only rewrites a key's value changes nothing). ``ahead`` keeps, the same way, the order of the jobs of a
state and queue that ``explain`` asked about (priority, submit time, id: read once, then followed),
so a job's place in its queue costs a search, not a read of the queue.

Before it answers, a replica writes ``keys.INDEX_SYNC`` (just past the index, inside the range it
watches) and waits for that write to come back through its watch: every change before it has then been
applied, so a count is as fresh as a read of the store, for one small write rather than a walk of the
index.
"""

from __future__ import annotations

import asyncio
import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from federation import keys
from federation.store import CompactedError, Op, Store, StoreError, WatchEvent
from federation.watched import Arrivals, stop

log = structlog.get_logger(__name__)

_SETTLE_ATTEMPTS = 4
"""Syncs a ``counts_at`` call makes at most: its own counts and other calls' in flight may each need one."""


class IndexCounts:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._counts: dict[str, int] = {}  # index prefix -> keys under it
        self._counted_at: dict[str, int] = {}  # index prefix -> the revision its count was read at
        self._arrivals = Arrivals()  # the last revision the watch delivered
        self._lock = asyncio.Lock()  # the watch applies nothing while ranges are counted
        self._syncing = asyncio.Lock()
        self._syncs = 0  # syncs begun
        self._synced = 0  # the last sync that came back
        self._watch: asyncio.Task[None] | None = None
        self._orders: dict[str, _Order] = {}  # index prefix (a state and queue) -> its jobs in line order
        self._ordered_at: dict[str, int] = {}

    async def counts(self, prefixes: Sequence[str]) -> list[int]:
        """Keys under each of ``prefixes`` (``keys.index_prefix``: a state's, or a state and queue's) now."""
        return (await self.counts_at(prefixes))[0]

    async def counts_at(self, prefixes: Sequence[str]) -> tuple[list[int], int]:
        """``counts``, and the revision they all stand at: a read of the index at that revision finds
        exactly these counts (a listing skips the ranges they say are empty, and reads the rest there).

        A range counted by the store stands at the revision of that count, which may be ahead of the
        watch; the watch is then let through it, so no count stands later than the others."""
        for _ in range(_SETTLE_ATTEMPTS):
            await self._fresh()
            revision = self._arrivals.seen
            missing = [prefix for prefix in dict.fromkeys(prefixes) if prefix not in self._counts]
            if not missing and all(self._counted_at[prefix] <= revision for prefix in prefixes):
                return [self._counts[prefix] for prefix in prefixes], revision
            async with self._lock:
                for start in range(0, len(missing), self._store.max_txn_ops):
                    chunk = missing[start : start + self._store.max_txn_ops]
                    result = await self._store.txn([], [Op.count(prefix) for prefix in chunk], [])
                    for prefix, count in zip(chunk, result.responses, strict=True):
                        self._counts[prefix] = count if isinstance(count, int) else 0
                        self._counted_at[prefix] = result.revision
        raise StoreError("the job index counts keep moving past the watch: counts are unavailable")

    async def ahead(self, prefixes: Sequence[str], place: LineKey) -> int:
        """Jobs under ``prefixes`` (each a state and queue's) before ``place`` in line order now."""
        await self._fresh()
        async with self._lock:
            for prefix in prefixes:
                if prefix not in self._orders:
                    read = await self._store.snapshot(prefix)
                    self._orders[prefix] = _Order(kv.value for kv in read.kvs)
                    self._ordered_at[prefix] = read.revision
        return sum(self._orders[prefix].before(place) for prefix in prefixes)

    async def _fresh(self) -> None:
        for _ in range(2):  # a watch that ended (behind a compaction) is started again, once
            if self._watch is None or self._watch.done():
                await self._start()
            if await self._caught_up():
                return
        raise StoreError("the job index watch keeps ending: counts are unavailable")

    async def close(self) -> None:
        await stop(self._watch)
        self._watch = None

    async def _start(self) -> None:
        """Forget every count (the watch that kept them stopped) and watch from the store's revision on."""
        for kept in (self._counts, self._counted_at, self._orders, self._ordered_at):
            kept.clear()
        self._arrivals.delivered(await self._store.revision())
        self._watch = asyncio.create_task(self._follow(self._arrivals.seen + 1))

    async def _caught_up(self) -> bool:
        """Whether the watch delivered a write made after this call began (False: it ended first).

        Callers that arrive while a sync is under way share the next one: one write serves them all."""
        ticket = self._syncs  # a sync numbered above this one began after this call
        async with self._syncing:
            if self._synced > ticket:
                return True
            self._syncs += 1
            number = self._syncs
            if not await self._sync():
                return False
            self._synced = number
            return True

    async def _sync(self) -> bool:
        revision = await self._store.put(keys.INDEX_SYNC, b"")
        assert self._watch is not None
        if await self._arrivals.wait(revision, self._watch):
            return True
        self._watch.result()  # raises what ended it, if anything did
        return False

    async def _follow(self, start: int) -> None:
        try:
            async for event in self._store.watch(
                keys.INDEX, start_revision=start, end=keys.INDEX_SYNC + "\0", previous=False
            ):
                async with self._lock:
                    self._apply(event)
        except CompactedError:
            log.warning("the job index watch fell behind a compaction: counting again")

    def _apply(self, event: WatchEvent) -> None:
        if event.key != keys.INDEX_SYNC:
            state_end = event.key.index("/", len(keys.INDEX)) + 1
            change = -1 if event.type == "delete" else 1 if event.kv is not None and event.kv.version == 1 else 0
            queue = event.key[: event.key.rindex("/") + 1]
            for prefix in (event.key[:state_end], queue):
                if change and event.revision > self._counted_at.get(prefix, event.revision):
                    self._counts[prefix] += change
            if event.revision > self._ordered_at.get(queue, event.revision):
                order = self._orders[queue]
                order.drop(event.key[len(queue) :])
                if event.type == "put" and event.kv is not None:
                    order.add(event.kv.value)
        self._arrivals.delivered(event.revision)


LineKey = tuple[float, float, str]
"""A job's place in line within its queue: (-priority, submit time, id)."""


def line_key(view: Mapping[str, Any]) -> LineKey:
    """The place in line of a job's list view (its index entry)."""
    return (-view["priority"], view["submit_time"], view["id"])


class _Order:
    """One index range's jobs in line order, with each job's place, for ``bisect``."""

    def __init__(self, values: Iterable[bytes]) -> None:
        self._places = {place[2]: place for place in map(_place, values)}
        self._line = sorted(self._places.values())

    def before(self, place: LineKey) -> int:
        return bisect.bisect_left(self._line, place)

    def add(self, value: bytes) -> None:
        place = _place(value)
        self._places[place[2]] = place
        bisect.insort(self._line, place)

    def drop(self, job_id: str) -> None:
        place = self._places.pop(job_id, None)
        if place is not None:
            del self._line[bisect.bisect_left(self._line, place)]


def _place(value: bytes) -> LineKey:
    return line_key(json.loads(value))
