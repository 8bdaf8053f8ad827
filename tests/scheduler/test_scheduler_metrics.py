"""The scheduler's Prometheus metrics follow what it does: leading, dispatching, queue depth, cluster freshness."""

from __future__ import annotations

from federation.scheduler.service import SchedulerService
from tests.scheduler.conftest import HarnessFactory

QUEUES = {"queues": [{"name": "a"}]}


async def test_metrics_count_dispatches_and_show_leadership_depth_and_report_age(
    make_harness: HarnessFactory,
) -> None:
    h = await make_harness({}, QUEUES)
    await h.join("c1", [{"count": 1, "resources": {"cpu": 2}}])
    for _ in range(3):
        await h.submit("t", cpu=1, runtime=1000)
    await h.tick()
    await h.tick(10)

    sample = h.service.metrics.registry.get_sample_value
    assert sample("fedq_scheduler_leader") == 1
    assert sample("fedq_scheduler_dispatched_total", {"cluster": "c1"}) == 2  # two fit; the third waits
    assert sample("fedq_scheduler_pending_jobs") == 1
    assert sample("fedq_scheduler_cycle_seconds_count") == 2
    assert sample("fedq_scheduler_plan_seconds_count") == 2
    assert sample("fedq_cluster_report_age_seconds", {"cluster": "c1"}) == 0  # reported in this tick, before the cycle

    standby = SchedulerService(h.store, h.config, h.clock)
    try:
        assert await standby.step() is None
        assert standby.metrics.registry.get_sample_value("fedq_scheduler_leader") == 0
    finally:
        await standby.close()


async def test_a_lost_cluster_shows_in_report_age_and_requeues(make_harness: HarnessFactory) -> None:
    h = await make_harness({"cluster": {"lostAfter": "15s", "requeueAfter": "60s"}}, QUEUES)
    await h.join("c1", [{"count": 1, "resources": {"cpu": 2}}])
    await h.submit("t", cpu=1, runtime=1000)
    await h.tick()
    del h.agents["c1"]  # the cluster goes silent
    await h.tick(61)
    sample = h.service.metrics.registry.get_sample_value
    assert sample("fedq_cluster_report_age_seconds", {"cluster": "c1"}) == 61
    assert sample("fedq_scheduler_lost_requeues_total", {"cluster": "c1"}) == 1
