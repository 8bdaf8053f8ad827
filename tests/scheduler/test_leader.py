"""Leader election: one leader at a time, takeover after lease expiry, and fencing of the deposed."""

from __future__ import annotations

from federation.leader import LeaderElection
from federation.store import MemoryStore, Op
from policies.clock import ManualClock


async def test_one_leader_then_takeover_and_the_old_leader_is_fenced() -> None:
    clock = ManualClock(0.0)
    store = MemoryStore(clock=clock)
    first = LeaderElection(store, ttl=5, identity="a")
    second = LeaderElection(store, ttl=5, identity="b")
    assert await first.try_acquire()
    assert not await second.try_acquire()
    clock.advance(3)
    assert await first.renew()
    clock.advance(4)  # renewed at t=3, so the lease lives until t=8
    assert not await second.try_acquire()

    clock.advance(6)  # first stops renewing: its lease expires
    store.expire_leases()
    assert await second.try_acquire()
    stale = await store.txn([first.fence()], [Op.put("dispatch", b"from a")], [])
    assert not stale.succeeded
    fresh = await store.txn([second.fence()], [Op.put("dispatch", b"from b")], [])
    assert fresh.succeeded
    assert not await first.renew()
    assert not first.is_leader


async def test_resign_hands_over_at_once() -> None:
    store = MemoryStore(clock=ManualClock(0.0))
    first = LeaderElection(store, identity="a")
    second = LeaderElection(store, identity="b")
    assert await first.try_acquire()
    await first.resign()
    assert await second.try_acquire()
