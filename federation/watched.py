"""Every key under a prefix, held in memory from one read and a watch of the prefix, for a replica that
reads those keys on every request and changes them seldom (the tokens: each request is authenticated,
and a hundred agents report every second). kube-apiserver caches token authentication the same way,
for a TTL; a watch bounds how stale an entry can be by the watch's delay instead (milliseconds).

A key the copy lacks is the caller's to read from the store (a token issued a moment ago through
another replica may not have arrived yet). A writer on this replica waits for its own write to come
back through the watch (``caught_up``), so what it changed holds on this replica once it has answered:
a token revoked here is refused here at once, and through any other replica within the watch's delay.
If the watch ends (behind a compaction, or the store refused it), the next read starts again from a
fresh read of the prefix; while it cannot, reads fail as the store does. A value ``parse`` refuses is
held as none, so its reader meets the refusal where it reads the store, as it would without the copy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Generic, TypeVar

import structlog

from federation.store import CompactedError, Store, WatchEvent

log = structlog.get_logger(__name__)

T = TypeVar("T")


class Arrivals:
    """The revision a watch has delivered, and the writers waiting for their write to come through it."""

    def __init__(self) -> None:
        self.seen = 0
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    async def wait(self, revision: int, watch: asyncio.Task[None]) -> bool:
        """Whether ``revision`` came through (False: ``watch`` ended first)."""
        if self.seen >= revision:
            return True
        arrived: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((revision, arrived))
        await asyncio.wait([arrived, watch], return_when=asyncio.FIRST_COMPLETED)
        came = arrived.done()
        arrived.cancel()
        return came

    def delivered(self, revision: int) -> None:
        self.seen = revision
        due = [waiter for waiter in self._waiting if waiter[0] <= revision]
        self._waiting = [waiter for waiter in self._waiting if waiter[0] > revision]
        for _, arrived in due:
            if not arrived.done():
                arrived.set_result(None)


async def stop(task: asyncio.Task[None] | None) -> None:
    """Cancel a follower's task and wait until it has ended, whatever it ended with."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class WatchedPrefix(Generic[T]):
    """Key (relative to ``prefix``) -> ``parse``d value of every key under ``prefix``."""

    def __init__(self, store: Store, prefix: str, parse: Callable[[bytes], T]) -> None:
        self._store = store
        self._prefix = prefix
        self._parse = parse
        self._values: dict[str, T] = {}
        self._arrivals = Arrivals()  # the revision the copy holds every change up to
        self._watch: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    async def get(self, key: str) -> T | None:
        """The value under ``prefix + key`` as the copy holds it; None when it holds none."""
        if self._watch is None or self._watch.done():
            await self._start()
        return self._values.get(key)

    async def caught_up(self, revision: int) -> None:
        """Return once the copy holds every change up to ``revision`` (a write this replica made), or the
        watch has ended (the next ``get`` reads the prefix afresh)."""
        if self._watch is not None:
            await self._arrivals.wait(revision, self._watch)

    async def close(self) -> None:
        await stop(self._watch)
        self._watch = None

    async def _start(self) -> None:
        async with self._starting:  # the requests that find no watch share one read
            if self._watch is not None and not self._watch.done():
                return
            read = await self._store.snapshot(self._prefix)
            self._values = {}
            for kv in read.kvs:
                self._hold(kv.key, kv.value)
            self._arrivals.delivered(read.revision)
            self._watch = asyncio.create_task(self._follow(read.revision + 1))

    async def _follow(self, start: int) -> None:
        try:
            async for event in self._store.watch(self._prefix, start_revision=start, previous=False):
                self._apply(event)
        except CompactedError:
            log.warning("a watch fell behind a compaction: reading again", prefix=self._prefix)
        except Exception:
            log.exception("a watch ended: reading again at the next request", prefix=self._prefix)

    def _hold(self, key: str, value: bytes | None) -> None:
        key = key.removeprefix(self._prefix)
        self._values.pop(key, None)
        if value is not None:
            with contextlib.suppress(ValueError):  # pydantic's ValidationError is one
                self._values[key] = self._parse(value)

    def _apply(self, event: WatchEvent) -> None:
        self._hold(event.key, None if event.type == "delete" or event.kv is None else event.kv.value)
        self._arrivals.delivered(event.revision)
