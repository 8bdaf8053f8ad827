"""What only the memory store has: clock-driven lease expiry, bounded history, simulated outages."""

from __future__ import annotations

import asyncio

import pytest

from federation.store import CompactedError, MemoryStore, StoreError, StoreUnavailable, put_many
from policies.clock import ManualClock, SystemClock

from .support import take


async def test_due_leases_expire_on_the_next_operation() -> None:
    clock = ManualClock(100.0)
    store = MemoryStore(clock=clock)
    lease = await store.grant(5.0)
    await store.put("k", b"v", lease=lease)

    clock.advance(4.9)
    assert await store.get("k") is not None
    clock.advance(0.2)
    assert await store.get("k") is None


async def test_expire_leases_reports_what_it_reaped_and_wakes_watchers() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    short, long = await store.grant(1.0), await store.grant(10.0)
    await store.put("short", b"", lease=short)
    revision = await store.put("long", b"", lease=long)
    events = store.watch("", start_revision=revision + 1)
    waiter = asyncio.create_task(take(events, 1))

    clock.advance(2.0)
    reaped = store.expire_leases()

    assert reaped == 1
    assert [(e.type, e.key) for e in await waiter] == [("delete", "short")]


async def test_with_a_system_clock_a_background_task_expires_leases() -> None:
    store = MemoryStore(clock=SystemClock(), lease_check_interval=0.01)
    lease = await store.grant(0.05)
    revision = await store.put("k", b"v", lease=lease)

    [event] = await take(store.watch("", start_revision=revision + 1), 1, timeout=5.0)

    assert (event.type, event.key) == ("delete", "k")
    await store.close()


async def test_history_beyond_the_limit_is_compacted_for_watchers() -> None:
    store = MemoryStore(clock=ManualClock(), history_limit=10)
    revisions = [await store.put(f"k/{i}", b"x") for i in range(30)]

    with pytest.raises(CompactedError) as compacted:
        await take(store.watch("k/", start_revision=revisions[0]), 1)
    recent = await take(store.watch("k/", start_revision=revisions[-5]), 5)

    assert revisions[0] < compacted.value.compact_revision <= revisions[-10]
    assert [e.revision for e in recent] == revisions[-5:]


async def test_a_watcher_that_falls_behind_the_history_limit_is_told_so() -> None:
    store = MemoryStore(clock=ManualClock(), history_limit=4)
    start = await store.put("k/0", b"x")
    events = store.watch("k/", start_revision=start)
    await take(events, 1)

    for i in range(1, 20):
        await store.put(f"k/{i}", b"x")

    with pytest.raises(CompactedError):
        await take(events, 1)


async def test_an_unavailable_store_refuses_operations_and_pauses_watches() -> None:
    store = MemoryStore(clock=ManualClock())
    start = await store.put("a", b"1")
    events = store.watch("", start_revision=start)
    await take(events, 1)
    waiter = asyncio.create_task(take(events, 1))

    store.set_available(False)
    with pytest.raises(StoreUnavailable):
        await store.put("b", b"1")
    store.set_available(True)
    revision = await store.put("c", b"1")

    assert [(e.key, e.revision) for e in await waiter] == [("c", revision)]


async def test_closing_ends_watches_and_refuses_operations() -> None:
    store = MemoryStore(clock=ManualClock())
    events = store.watch("", start_revision=1)
    waiter = asyncio.create_task(anext(events, None))
    await store.put("a", b"1")
    await waiter

    ended = asyncio.create_task(anext(events, None))
    await store.close()

    assert await ended is None
    with pytest.raises(StoreError):
        await store.get("a")


async def test_a_hundred_thousand_keys_range_by_prefix() -> None:
    store = MemoryStore(clock=ManualClock(), history_limit=1_000)
    jobs = [(f"jobs/{i:06d}", b"x") for i in range(100_000)]
    await put_many(store, reversed(jobs))
    await store.put("queues/a", b"q")

    assert len(await store.range("jobs/")) == 100_000
    assert [kv.key for kv in await store.range("jobs/04999")] == [f"jobs/{49_990 + i:06d}" for i in range(10)]
    assert [kv.key for kv in await store.range("queues/")] == ["queues/a"]
