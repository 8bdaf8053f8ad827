"""A lease renewed from a thread of its own, so that the leader keeps it through any long stretch of
work on its event loop (issue 35: a leader loading a million jobs, or parsing a burst of submits, let
its 5 s lease lapse 17 times, and each loss cost a takeover).

The thread has its own event loop and its own store connection (``Reopenable.another``): the GIL
hands it a turn every few milliseconds however busy the leader's loop is. It renews every third of the
lease's TTL, and only while the leader's loop still shows it is alive (``beat``, from a task on that
loop) within ``stall`` seconds: a process whose loop is stuck for good lets its lease lapse, and a
stand-by takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import structlog

from federation.store import LeaseNotFound, Store, StoreError

log = structlog.get_logger("fedq.leader")

STALL = 120.0
"""Seconds the leader's event loop may show no progress before its lease is left to lapse: longer than
any legitimate stretch of work (a cold load of a million jobs took about a minute)."""


@runtime_checkable
class Reopenable(Protocol):
    def another(self) -> Store:
        """A new connection to the same store, for use on another event loop (another thread)."""
        ...


class LeaseKeeper:
    """Renews ``lease`` every ``ttl / 3`` seconds from its thread until ``stop`` or until the lease is
    gone (``lost``)."""

    def __init__(
        self,
        store: Reopenable,
        lease: int,
        ttl: float,
        *,
        stall: float = STALL,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._lease = lease
        self._ttl = ttl
        self._every = ttl / 3
        self._stall = stall
        self._monotonic = monotonic
        self._beat = monotonic()
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, name=f"lease-keeper-{lease:x}", daemon=True)
        self._beats: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the thread, and the beat on the caller's (the leader's) event loop."""
        self._beats = asyncio.get_running_loop().create_task(self._beating())
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._beats is not None:
            self._beats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beats
        await asyncio.to_thread(self._thread.join)

    async def _beating(self) -> None:
        while True:
            self._beat = self._monotonic()
            await asyncio.sleep(self._every)

    def _run(self) -> None:
        asyncio.run(self._renewing())

    async def _renewing(self) -> None:
        store = self._store.another()
        try:
            while not self._stop.wait(self._every):  # this thread's loop has nothing else to run
                stalled = self._monotonic() - self._beat
                if stalled > self._stall:
                    log.error("the leader's event loop is stuck; leaving its lease to lapse", stalled=round(stalled))
                    return
                sent = self._monotonic()
                try:
                    await store.keepalive(self._lease)
                except LeaseNotFound:
                    self.lost = True
                    return
                except StoreError as exc:  # the next try may reach another member
                    log.warning("renewing the leader's lease failed", error=str(exc))
                took = self._monotonic() - sent
                if took > self._every:  # three in a row this slow and the lease lapses: say why it did
                    log.warning("renewing the leader's lease was slow", seconds=round(took, 2), ttl=self._ttl)
        finally:
            await store.close()
