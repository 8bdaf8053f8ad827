"""Dispatch on a three-member etcd while members die: the member the scheduler is connected to, then the
etcd leader, each SIGKILLed from another thread while a dispatch txn is out. Nothing is lost, nothing is
dispatched twice, and dispatch goes on.

The real scheduler service (``tests/scheduler/harness.py``: simulated agents, a manual clock) runs on
the real cluster over TLS and etcd auth. A round that meets the outage fails as the service's own loop
would see it (``StoreError``) and the next round carries on; every round is bounded in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from federation import keys
from federation.models import JobRecord, JobState
from federation.store import EtcdCluster, EtcdStore, Op, Store, StoreError
from tests.scheduler.harness import Harness

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

QUEUES = {"queues": [{"name": "a"}]}
NODES = [{"count": 4, "resources": {"cpu": 4}}]  # 16 cpus a cluster, two clusters: 32 of the 60 jobs at once
JOBS = 60
# Small cycles spread the dispatch over many txns, so a kill lands in the middle of it; clusters are
# never lost (a lost-cluster requeue would be a second dispatch for a reason other than the store).
CONFIG = {"dispatchPerCycle": 6, "cluster": {"lostAfter": "1h", "requeueAfter": "1h"}}
TICK = 10.0  # manual seconds a round; every job runs 30 s
ROUND_TIMEOUT = 30.0  # real seconds a round may take, outage included
MAX_ROUNDS = 60


class KillDuringDispatch:
    """The store, running a kill in a thread while its next dispatch txn (one that writes an assignment) is out."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.armed: Callable[[], None] | None = None
        self.fired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        kill = self.armed
        if kill is None or not any(op.kind == "put" and op.key.startswith(keys.ASSIGNMENTS) for op in success):
            return await self.store.txn(compares, success, failure)
        self.armed = None
        killing = asyncio.get_running_loop().run_in_executor(None, kill)
        try:
            return await self.store.txn(compares, success, failure)
        finally:
            await killing
            self.fired += 1


async def rounds(h: Harness, done: Callable[[], Awaitable[bool]], outages: list[str]) -> None:
    """Run rounds until ``done``; a round the outage breaks is noted and the next one carries on."""
    for _ in range(MAX_ROUNDS):
        try:
            async with asyncio.timeout(ROUND_TIMEOUT):
                await h.tick(TICK)
        except (StoreError, TimeoutError) as error:
            outages.append(type(error).__name__)
        if await done():
            return
    raise AssertionError(f"not done after {MAX_ROUNDS} rounds (outages: {outages})")


async def records(store: Store) -> dict[str, JobRecord]:
    return {kv.key.removeprefix(keys.JOBS): JobRecord.from_bytes(kv.value) for kv in await store.range(keys.JOBS)}


async def test_killing_the_connected_member_and_the_leader_mid_dispatch_loses_and_doubles_nothing(
    etcd_cluster: EtcdCluster,
) -> None:
    etcd = EtcdStore(etcd_cluster.connection, prefix="/fedq/chaos/", timeout=5.0)  # connected to member 0 first
    store = KillDuringDispatch(etcd)
    h = Harness(store, CONFIG, QUEUES)
    outages: list[str] = []
    try:
        await h.start()
        await h.join("c1", NODES)
        await h.join("c2", NODES)
        submitted = {await h.submit("t", cpu=1, runtime=30) for _ in range(JOBS)}

        async def dispatched() -> int:
            try:
                return sum(r.state is not JobState.PENDING for r in (await records(etcd)).values())
            except StoreError:
                return 0

        async def fired_and_dispatched_since(count: int, before: int) -> bool:
            return store.fired == count and await dispatched() > before

        store.armed = lambda: etcd_cluster.stop_member(0)
        await rounds(h, lambda: fired_and_dispatched_since(1, 0), outages)
        first_kill = await dispatched()
        assert first_kill < JOBS  # the kill came mid-dispatch, with jobs still to go
        await rounds(h, lambda: fired_and_dispatched_since(1, first_kill), outages)  # on members 1 and 2

        etcd_cluster.start_member(0)
        leader = etcd_cluster.leader()
        store.armed = lambda: etcd_cluster.stop_member(leader)
        before_leader = await dispatched()
        await rounds(h, lambda: fired_and_dispatched_since(2, before_leader), outages)
        etcd_cluster.start_member(leader)

        async def all_ended() -> bool:
            try:
                return all(r.state is JobState.SUCCEEDED for r in (await records(etcd)).values())
            except StoreError:
                return False

        await rounds(h, all_ended, outages)

        final = await records(etcd)
        assert set(final) == submitted  # nothing lost, nothing made up
        for job_id, record in final.items():
            dispatches = [e for e in record.events if e.target is JobState.DISPATCHED]
            assert len(dispatches) == 1, f"{job_id} dispatched {len(dispatches)} times: {record.events}"
            assert record.state is JobState.SUCCEEDED
    finally:
        await h.close()
        await etcd.close()
