"""save/load through the store (memory and real etcd): round trip, running jobs, chunks, increments."""

from __future__ import annotations

import json

from federation import keys
from federation.accounting import Accountant, storage
from federation.store import MemoryStore, Op, Store
from policies.clock import ManualClock

HOUR = 3600.0
MINUTE = 60.0
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
    # Both ran within the hour from T0: one chunk of minutes each.
    assert {kv.key for kv in await store.range(keys.HISTORY)} == {
        storage.history_key("alice", "research.vision", "east", MINUTE, T0),
        storage.history_key("carol", "q", "east", MINUTE, T0),
    }
    history = await store.get(storage.history_key("carol", "q", "east", MINUTE, T0))
    # carol's history chunk went in the same txn as her document, at the first save, and not since.
    assert history is not None and history.mod_revision == carol.mod_revision


async def test_downsampled_chunks_replace_their_minutes_in_the_store(store: Store) -> None:
    """Two days of 10 cores, saved hourly: the store holds minutes only for the last day, and a
    load sums to exactly what ran."""
    clock = ManualClock(T0)
    acct = new(clock)
    acct.start("a", "alice", "q", "east", {"cpu": 10}, at=T0)
    for _ in range(48):
        clock.advance(HOUR)
        await acct.save(store)
    minutes = [
        storage.parse_history_key(kv.key)[2]
        for kv in await store.range(keys.HISTORY)
        if storage.parse_history_key(kv.key)[1] == MINUTE
    ]
    # At T0 + 48 h, hours that ended over a day ago are hour buckets: minutes remain for hours 24-47.
    assert sorted(minutes) == [T0 + h * HOUR for h in range(24, 48)]
    reader = new(clock)
    await reader.load(store)
    (history,) = reader.snapshot().history.values()
    assert history.total().seconds == {"cpu": 10 * 48 * HOUR}


async def test_load_of_an_empty_store_is_empty(store: Store) -> None:
    acct = new(ManualClock(T0))
    acct.start("a", "alice", "q", "east", {"cpu": 1}, at=T0)
    await acct.load(store)
    assert acct.running() == set()
    assert acct.snapshot(T0).tenants == {}


async def test_write_groups_keeps_a_group_in_one_txn_when_it_fits() -> None:
    store = MemoryStore(clock=ManualClock(T0), max_txn_ops=4)
    groups = [[Op.put(f"g{g}/{i}", b"x") for i in range(size)] for g, size in enumerate([3, 1, 3, 6])]
    first = await store.revision()
    await storage.write_groups(store, groups)
    revisions: dict[str, set[int]] = {}
    for kv in await store.range("g"):
        revisions.setdefault(kv.key.split("/")[0], set()).add(kv.mod_revision)
    # g0 and g1 share a txn (3 + 1 ops), g2 has its own (3 + 3 > 4), g3 (6 > 4) is split into 4 + 2.
    assert revisions["g0"] == revisions["g1"] == {first + 1}
    assert revisions["g2"] == {first + 2}
    assert revisions["g3"] == {first + 3, first + 4}
