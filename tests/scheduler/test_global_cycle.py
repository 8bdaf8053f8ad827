"""The global scheduler end to end on real etcd, simulated member clusters and an injected clock
(issue 5 acceptance 1)."""

from __future__ import annotations

from collections import Counter

import pytest

from federation.models import JobState
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

pytestmark = pytest.mark.etcd

FLAT = {"queues": [{"name": "a", "tenants": []}, {"name": "b", "tenants": []}]}
CPU10 = [{"count": 1, "namePrefix": "n", "resources": {"cpu": 10}}]


async def running_cpus(h: Harness, ids: dict[str, str]) -> Counter[str]:
    """CPUs held right now per owner (tenant or queue) among ``ids`` (job id -> owner)."""
    held: Counter[str] = Counter()
    for job_id, owner in ids.items():
        if (await h.job(job_id)).state is JobState.RUNNING:
            held[owner] += 1
    return held


async def test_fair_share_follows_decayed_usage_and_converges(make_harness: HarnessFactory) -> None:
    # Half-life 100 s. x first runs alone on all 10 cpus for 300 s (3 half-lives: its RUP nears 10),
    # then x and y both keep a backlog of 1-cpu, 20 s jobs. y, with no past usage (RUP at the 0.5
    # floor), must get the larger slice at first; after a few half-lives both RUPs approach 5 and
    # the slices approach 5 cpus each.
    h = await make_harness({"cyclePeriod": "1s", "fairshare": {"halfLife": "100s"}}, FLAT)
    await h.join("c1", CPU10)
    for _ in range(10):
        await h.submit("x", runtime=300)
    await h.tick()
    await h.tick(300)
    owners = {}
    for _ in range(120):
        owners[await h.submit("x", runtime=20)] = "x"
        owners[await h.submit("y", runtime=20)] = "y"
    samples: list[Counter[str]] = []
    for _ in range(40):
        await h.tick(10)
        samples.append(await running_cpus(h, owners))
    early = sum(samples[:3], Counter())
    late = sum(samples[-10:], Counter())
    assert early["y"] > early["x"], samples[:3]
    assert abs(late["x"] - late["y"]) <= 0.2 * (late["x"] + late["y"]), samples[-10:]


async def test_a_cap_is_never_exceeded(make_harness: HarnessFactory) -> None:
    queues = {"queues": [{"name": "a", "cap": {"cpu": 4}}, {"name": "b"}]}
    h = await make_harness({}, queues)
    await h.join("c1", CPU10)
    # 12 one-cpu jobs on 10 idle cpus: the cap, not the capacity, stops a at 4 while they run (1000 s).
    owners = {await h.submit("t", queue="a", runtime=1000): "a" for _ in range(12)}
    for _ in range(6):
        await h.tick(10)
        assert (await running_cpus(h, owners))["a"] <= 4
    assert (await running_cpus(h, owners))["a"] == 4


async def test_a_guarantee_is_reclaimed_within_the_grace_period(make_harness: HarnessFactory) -> None:
    # a borrows the whole cluster with preemptible jobs; b, guaranteed 6 cpus, then asks for them.
    queues = {"queues": [{"name": "a", "acceptSurplus": True}, {"name": "b", "guarantee": {"cpu": 6}}]}
    h = await make_harness({"reclaim": {"grace": "20s", "maxPerMinute": 100}}, queues)
    await h.join("c1", CPU10)
    borrowers = {await h.submit("t", queue="a", runtime=10_000, preemptible=True): "a" for _ in range(10)}
    await h.tick()
    await h.tick(1)
    assert (await running_cpus(h, borrowers))["a"] == 10
    owners = {await h.submit("u", queue="b", runtime=10_000): "b" for _ in range(6)}
    for _ in range(8):
        await h.tick(5)
    assert (await running_cpus(h, owners))["b"] == 6
    assert (await running_cpus(h, borrowers))["a"] == 4
    preempted = [job_id for job_id in borrowers if (await h.job(job_id)).preemptions]
    assert len(preempted) == 6


async def test_a_big_job_is_reserved_and_small_ones_backfill_without_delaying_it(make_harness: HarnessFactory) -> None:
    # t=0: a 6-cpu job runs until t=100. The 8-cpu job cannot start before t=100 and reserves that.
    # A 2-cpu 50 s job fits beside it and ends by t=50 < 100: it backfills at once. A 4-cpu 300 s job
    # would still hold 4 cpus at t=100, leaving 6 < 8: it must not start before the big job.
    h = await make_harness({"reservation": {"after": "0s", "depth": 1}}, FLAT)
    await h.join("c1", CPU10)
    first = await h.submit("t", cpu=6, runtime=100)
    await h.tick()
    await h.tick(1)
    big = await h.submit("t", cpu=8, runtime=100)
    small = await h.submit("t", cpu=2, runtime=50)
    long = await h.submit("t", cpu=4, runtime=300)
    await h.tick(1)
    await h.tick(1)
    assert (await h.job(small)).state is JobState.RUNNING
    assert (await h.job(long)).state in (JobState.PENDING, JobState.RESERVED)
    assert (await h.job(big)).state is JobState.RESERVED
    for _ in range(12):
        await h.tick(10)
    started = {job_id: (await h.job(job_id)).start_time for job_id in (first, big, long)}
    assert started[big] is not None and started[first] is not None
    assert started[big] <= started[first] + 100 + 10  # within one tick of its reservation
    assert started[long] is None or started[long] >= started[big]


async def test_a_gang_never_splits_across_clusters_and_selectors_hold(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, FLAT)
    four = [{"count": 4, "namePrefix": "n", "resources": {"cpu": 1}}]
    await h.join("eu", four, {"region": "eu"})
    await h.join("us", four, {"region": "us"})
    whole = await h.submit("t", replicas=4, runtime=50)
    split_only = await h.submit("t", replicas=6, runtime=50)
    in_us = await h.submit("t", replicas=1, runtime=50, selector={"region": "us"})
    nowhere = await h.submit("t", replicas=1, runtime=50, selector={"region": "mars"})
    await h.tick()
    await h.tick(1)
    assert (await h.job(whole)).state is JobState.RUNNING
    split = await h.job(split_only)
    assert split.state is JobState.UNSCHEDULABLE
    assert "fits no matching cluster's nodes" in split.reason
    us = await h.job(in_us)
    assert (us.state, us.cluster) == (JobState.RUNNING, "us")
    assert (await h.job(whole)).cluster == "eu"
    lost = await h.job(nowhere)
    assert lost.state is JobState.UNSCHEDULABLE and "no cluster has the labels" in lost.reason
