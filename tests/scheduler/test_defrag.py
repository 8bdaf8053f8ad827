"""The leader defragments etcd members whose files are mostly freed pages, followers first, once a period.

The worked examples use the shipped defaults (``store.defragAbove`` 200 MiB, ``store.budgetBytes``
1536 MiB); the service tests run the production upkeep on the session's real etcd.
"""

from __future__ import annotations

import asyncio
import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from federation.config import StoreUpkeepConfig
from federation.scheduler.defrag import to_defragment
from federation.store import EtcdServer, EtcdStore, MemberSpace, Op, Store, put_many
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

MIB = 1024 * 1024
QUEUES = {"queues": [{"name": "a"}]}
FREED = 64 * 65536  # what free_pages frees: 4 MiB


def test_worked_examples_of_which_members_are_defragmented_and_in_what_order() -> None:
    config = StoreUpkeepConfig()
    leader = MemberSpace("c:2379", 1024 * MIB, 724 * MIB, True)  # 300 MiB free: over 200 MiB
    busy = MemberSpace("a:2379", 1024 * MIB, 774 * MIB, False)  # 250 MiB free
    tidy = MemberSpace("b:2379", 600 * MIB, 500 * MIB, False)  # 100 MiB free, under the budget: left
    full = MemberSpace("d:2379", 1600 * MIB, 1590 * MIB, False)  # past 1536 MiB: its 10 MiB are worth it
    packed = MemberSpace("e:2379", 1600 * MIB, 1600 * MIB, False)  # past the budget, nothing to give back

    assert to_defragment([leader, busy, tidy, full, packed], config) == [busy, full, leader]
    assert to_defragment([tidy, packed], config) == []


@given(st.lists(st.tuples(st.integers(0, 2047), st.integers(0, 2047), st.booleans()), max_size=8))  # under the budget
def test_the_leader_is_never_defragmented_before_a_follower(sizes: list[tuple[int, int, bool]]) -> None:
    config = StoreUpkeepConfig.model_validate({"defragAbove": "100Mi", "budgetBytes": "2Gi"})
    members = [MemberSpace(f"m{i}:2379", a * MIB, min(a, b) * MIB, lead) for i, (a, b, lead) in enumerate(sizes)]
    chosen = to_defragment(members, config)
    assert [m.leader for m in chosen] == sorted(m.leader for m in chosen)
    assert {m.member for m in chosen} == {m.member for m in members if m.free >= 100 * MIB}


async def free_pages(store: Store) -> MemberSpace:
    """Write 4 MiB, delete it, compact it away, and wait until etcd counts it free: it does at its next
    backend commit, at most 100 ms after a write, and tells no one, so this looks every 50 ms."""
    await put_many(store, [(f"junk/{i}", b"x" * 65536) for i in range(64)])
    await store.txn([], [Op.delete(f"junk/{i}") for i in range(64)])
    await store.compact(await store.revision(), physical=True)
    async with asyncio.timeout(10):
        while True:
            [member] = await store.members()
            if member.free >= FREED:
                return member
            await store.put("poke", b"")  # a write, so a commit comes
            await asyncio.sleep(0.05)


def defragmentations(h: Harness) -> float:
    return h.service.metrics.registry.get_sample_value("fedq_store_defragmentations_total") or 0.0


async def test_the_leader_defragments_a_member_with_enough_free_pages_once_a_period(
    make_harness: HarnessFactory,
) -> None:
    h = await make_harness({"store": {"defragAbove": "2Mi", "defragEvery": "1h"}}, QUEUES)
    before = await free_pages(h.store)

    await h.tick()
    assert await h.service.upkeep.defrag.finished() == [before.member]
    [after] = await h.store.members()
    assert after.free < 2 * MIB and after.size <= before.size - FREED
    assert defragmentations(h) == 1

    await free_pages(h.store)
    await h.tick(1800)  # half a period on: not looked at again yet
    assert defragmentations(h) == 1
    await h.tick(1800)
    assert await h.service.upkeep.defrag.finished() == [before.member]
    assert defragmentations(h) == 2


async def test_without_a_root_certificate_etcd_refuses_and_the_leader_says_what_to_do(
    etcd_server: EtcdServer, store_prefix: str
) -> None:
    """The connection's own user may not defragment (etcd: root only); the cycle is not held up."""
    plain = dataclasses.replace(etcd_server.connection, maintenance_cert=None, maintenance_key=None)
    store = EtcdStore(plain, prefix=store_prefix)
    h = Harness(store, {"store": {"defragAbove": "2Mi"}}, QUEUES, 1_000_000.0)
    await h.start()
    try:
        await free_pages(store)
        with capture_logs() as logs:
            await h.tick()
            assert await h.service.upkeep.defrag.finished() == []
        [refused] = [entry for entry in logs if entry["event"].startswith("etcd refused to defragment")]
        assert "--etcd-maintenance-cert" in refused["event"] and refused["free_bytes"] >= FREED
        assert defragmentations(h) == 0
        job = await h.submit("t", cpu=1, runtime=10)
        await h.join("c1", [{"count": 1, "resources": {"cpu": 4}}])
        await h.tick()
        assert (await h.job(job)).cluster == "c1"  # cycles go on
    finally:
        await h.close()
        await store.close()
