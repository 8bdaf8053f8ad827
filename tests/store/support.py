"""Helpers shared by the store suites: bounded event collection and backend-neutral passing of time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from federation.store import MemoryStore, Store, WatchEvent
from policies.clock import ManualClock

EVENT_TIMEOUT = 10.0


async def take(events: AsyncIterator[WatchEvent], count: int, timeout: float = EVENT_TIMEOUT) -> list[WatchEvent]:
    """The next ``count`` events, failing the test if they do not all arrive within ``timeout``."""
    got: list[WatchEvent] = []
    async with asyncio.timeout(timeout):
        while len(got) < count:
            got.append(await anext(events))
    return got


async def let_time_pass(store: Store, seconds: float) -> None:
    """Move the memory store's manual clock, or let real time pass for etcd's own lease timers."""
    if isinstance(store, MemoryStore):
        assert isinstance(store.clock, ManualClock)
        store.clock.advance(seconds)
        store.expire_leases()
    else:
        await asyncio.sleep(seconds)
