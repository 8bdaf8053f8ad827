"""save/load through the store (memory and real etcd): round trip, running jobs, chunks, increments."""

from __future__ import annotations

import json

from federation import keys
from federation.accounting import Accountant, storage
from federation.store import Store
from policies.clock import ManualClock

HOUR = 3600.0
T0 = 19_675 * 86_400.0


def new(clock: ManualClock) -> Accountant:
    return Accountant(clock, HOUR, {"cpu": 1.0})


async def test_round_trip_keeps_meters_history_and_running_jobs(store: Store) -> None:
    clock = ManualClock(T0)
    acct = new(clock)
    acct.start("a", "alice", "research.vision", "east", {"cpu": 100}, at=T0)
    acct.start("b", "bob", "scratch.default", "west", {"cpu": 4, "memory": 2.0**30}, at=T0 + 60)
    acct.set_factor("bob", 10.0)
    clock.advance(2 * HOUR)
    acct.stop("b", at=clock.now())
    clock.advance(HOUR)
    await acct.save(store)
    before = acct.snapshot()

    other = new(clock)
    await other.load(store)
    after = other.snapshot()
    assert other.running() == {"a"}
    assert after.factors == {"bob": 10.0}
    for table in ("tenants", "queues", "series"):
        assert getattr(after, table) == getattr(before, table), table
    assert {k: h.buckets for k, h in after.history.items()} == {k: h.buckets for k, h in before.history.items()}

    # The loaded accountant goes on: alice's job stops 1 h later; 100 cores x 4 h = 400 core-hours.
    other.stop("a", at=T0 + 4 * HOUR)
    assert other.snapshot(T0 + 5 * HOUR).tenants["alice"].seconds["cpu"] / HOUR == 400


async def test_a_reader_extrapolates_running_jobs_to_its_own_time(store: Store) -> None:
    """An API replica loads what the scheduler saved an hour ago and reads the present."""
    clock = ManualClock(T0)
    acct = new(clock)
    acct.start("a", "alice", "q", "east", {"cpu": 10}, at=T0)
    clock.advance(HOUR)
    await acct.save(store)
    clock.advance(HOUR)
    reader = new(clock)
    await reader.load(store)
    snap = reader.snapshot()
    assert snap.tenants["alice"].seconds["cpu"] == 10 * 2 * HOUR
    assert snap.window(T0 + HOUR, T0 + 2 * HOUR)[("alice", "q", "east")].seconds["cpu"] == 10 * HOUR


async def test_save_writes_only_changed_tenants_and_splits_running_jobs(store: Store) -> None:
    clock = ManualClock(T0)
    acct = new(clock)
    acct.start("c", "carol", "q", "east", {"cpu": 1}, at=T0)
    acct.stop("c", at=T0 + 60)
    # 5000 running jobs of ~60 bytes each are over one 256 KiB chunk.
    for i in range(5000):
        acct.start(f"job-{i:06d}", "alice", "research.vision", "east", {"cpu": 1}, at=T0)
    clock.advance(600)
    await acct.save(store)
    chunks = await store.range(storage.RUNS + "alice/")
    assert len(chunks) == 2
    assert all(len(kv.value) <= storage.MAX_CHUNK_BYTES for kv in chunks)
    carol = await store.get(storage.tenant_key("carol"))
    assert carol is not None

    for i in range(4000):
        acct.stop(f"job-{i:06d}", at=clock.now())
    clock.advance(600)
    await acct.save(store)
    assert len(await store.range(storage.RUNS + "alice/")) == 1  # the stale second chunk is gone
    # carol was idle since the first save: her document was not rewritten.
    again = await store.get(storage.tenant_key("carol"))
    assert again is not None and again.mod_revision == carol.mod_revision

    reader = new(clock)
    await reader.load(store)
    assert len(reader.running()) == 1000
    doc = json.loads((await store.get(storage.tenant_key("alice"))).value)  # type: ignore[union-attr]
    assert doc["c"] == 1
    assert {kv.key for kv in await store.range(keys.HISTORY)} == {
        storage.history_key("alice", "research.vision", "east"),
        storage.history_key("carol", "q", "east"),
    }


async def test_load_of_an_empty_store_is_empty(store: Store) -> None:
    acct = new(ManualClock(T0))
    acct.start("a", "alice", "q", "east", {"cpu": 1}, at=T0)
    await acct.load(store)
    assert acct.running() == set()
    assert acct.snapshot(T0).tenants == {}
