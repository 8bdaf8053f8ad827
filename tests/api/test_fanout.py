"""The shared store watch behind event streams (``federation.fanout``): a stream whose reader stalls is
ended (to resume later) without holding the others back, and a stream resuming before what the shared
watch has passed restarts it without the streams already following seeing anything twice or missing
anything."""

from __future__ import annotations

import asyncio

import pytest

from federation.fanout import FEED_DEPTH, Feed, FellBehind, Hub
from federation.store import MemoryStore, WatchEvent
from policies.clock import ManualClock

GUARD = 10.0


def _by_key(batch: list[WatchEvent]) -> list[tuple[str, list[WatchEvent]]]:
    return [(event.key, [event]) for event in batch]


async def _revisions(feed: Feed[list[WatchEvent]], count: int) -> list[int]:
    """The next ``count`` revisions the feed gives."""
    seen: list[int] = []
    async with asyncio.timeout(GUARD):
        async for got in feed.items(GUARD):
            assert got is not None
            seen.append(got[0])
            if len(seen) == count:
                return seen
    return seen


async def test_a_stalled_feed_is_ended_and_the_others_get_everything() -> None:
    store = MemoryStore(clock=ManualClock(0))
    hub = Hub(store, "k/", _by_key)
    start = await store.revision()
    stalled = hub.subscribe("k/a", start)
    reading = hub.subscribe("k/a", start)
    writes = FEED_DEPTH + 10
    read = asyncio.create_task(_revisions(reading, writes))
    revisions = []
    for n in range(writes):
        revisions.append(await store.put("k/a", str(n).encode()))
        await asyncio.sleep(0)  # the reader keeps up; the stalled one never reads
    assert await read == revisions
    got = []
    with pytest.raises(FellBehind):
        async for item in stalled.items(GUARD):
            got.append(item)
    assert len(got) == FEED_DEPTH  # what it held is still given: its client resumes after the last one
    stalled.close()
    reading.close()
    await store.close()


async def test_a_resume_behind_the_shared_watch_restarts_it_and_nobody_sees_a_revision_twice() -> None:
    store = MemoryStore(clock=ManualClock(0))
    hub = Hub(store, "k/", _by_key)
    before = [await store.put("k/a", b"old") for _ in range(3)]
    following = hub.subscribe("k/a", before[-1])
    first = [await store.put("k/a", b"new") for _ in range(2)]
    assert await _revisions(following, 2) == first
    resumed = hub.subscribe("k/a", before[0])  # before the shared watch began: it starts again from there
    other = hub.subscribe("k/b", before[0])
    later = [await store.put("k/a", b"newer"), await store.put("k/b", b"b")]
    assert await _revisions(resumed, 5) == [*before[1:], *first, later[0]]
    assert await _revisions(other, 1) == [later[1]]
    assert await _revisions(following, 1) == [later[0]]  # nothing again of what it had, nothing missed
    for feed in (following, resumed, other):
        feed.close()
    assert hub.feeds == 0
    await store.close()
