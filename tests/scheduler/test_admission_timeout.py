"""A cluster that reports but never admits what it is sent does not keep it for ever: after
``cluster.admitWithin`` the scheduler service requeues the job (not a retry), and a cancel asked
meanwhile ends it Cancelled."""

from __future__ import annotations

import pytest

from federation.lifecycle import Cancel
from federation.models import JobState
from federation.models.cluster import ClusterReport, ReportReply
from member_agent.agent import Agent
from tests.scheduler.conftest import HarnessFactory

pytestmark = pytest.mark.etcd

CPU4 = [{"count": 1, "resources": {"cpu": 4}}]
CONFIG = {"cluster": {"lostAfter": "15s", "requeueAfter": "1h", "admitWithin": "30s"}}


def deafen(agent: Agent) -> None:
    """The agent goes on reporting but drops every assignment it is sent."""
    real = agent.handle_reply

    def deaf(report: ClusterReport, reply: ReportReply) -> None:
        real(report, reply.model_copy(update={"assignments": []}))

    agent.handle_reply = deaf  # type: ignore[method-assign]


async def test_a_job_its_cluster_does_not_admit_is_requeued_after_admit_within(make_harness: HarnessFactory) -> None:
    h = await make_harness(CONFIG, {"queues": [{"name": "a"}]})
    agent = await h.join("deaf", CPU4)
    deafen(agent)
    job_id = await h.submit("x", runtime=50)
    await h.tick()
    assert (await h.job(job_id)).state is JobState.DISPATCHED
    await h.tick(30)
    assert (await h.job(job_id)).state is JobState.DISPATCHED  # not yet past admitWithin
    await h.tick(1)
    record = await h.job(job_id)  # requeued, and dispatched again in the same cycle
    assert (record.state, record.epoch, record.attempt, record.retries) == (JobState.DISPATCHED, 2, 1, 0)
    requeue = record.events[-2]
    assert (requeue.source, requeue.target) == (JobState.DISPATCHED, JobState.PENDING)
    assert "deaf did not admit it within 30s" in requeue.reason
    registry = h.service.metrics.registry
    assert registry.get_sample_value("fedq_scheduler_admission_requeues_total", {"cluster": "deaf"}) == 1
    del agent.handle_reply  # it hears again: the next dispatch (epoch 2) runs
    for _ in range(3):
        await h.tick(30)
    record = await h.job(job_id)
    assert (record.state, record.epoch) == (JobState.SUCCEEDED, 2)


async def test_a_cancel_asked_while_not_admitted_ends_cancelled(make_harness: HarnessFactory) -> None:
    h = await make_harness(CONFIG, {"queues": [{"name": "a"}]})
    deafen(await h.join("deaf", CPU4))
    job_id = await h.submit("x", runtime=50)
    await h.tick()
    await h.jobs.apply(await h.jobs.get(job_id), Cancel("alice"), now=h.clock.now())
    await h.tick(31)
    record = await h.job(job_id)
    assert record.state is JobState.CANCELLED and "did not admit" in record.reason
