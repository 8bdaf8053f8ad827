"""A cluster running tens of thousands of jobs still reports: the stored report keeps per running job only
what the scheduler needs, within etcd's 1.5 MiB request limit; one that cannot fit is refused whole."""

from __future__ import annotations

import pytest

from federation import keys
from federation.auth import Role
from federation.clusters import ReportTooLarge
from federation.models import JobState
from federation.models.cluster import ClusterReport, JoinRequest, LatestReport, NodeReport, RunningJob
from tests.scheduler.conftest import HarnessFactory

NODES = [NodeReport(name="n+4999", count=5000, allocatable={"cpu": 64.0}, free={"cpu": 1.0})]


def running(count: int, width: int = 15) -> list[RunningJob]:
    return [
        RunningJob(job_id=f"{i:0{width}d}", epoch=1, resources={"cpu": 1.0, "memory": 2.0**31}, expected_end=9e9)
        for i in range(count)
    ]


async def test_twelve_thousand_running_jobs_are_stored_and_followed(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    await h.clusters.join(JoinRequest(token=await h.tokens.issue(Role.JOIN, "big"), name="big"))
    await h.clusters.report("big", ClusterReport(nodes=NODES, running=running(12_000)))  # 1.8 MB as sent
    await h.service.follow()
    await h.service.sync()
    assert h.service.state is not None
    view = h.service.state.clusters["big"]
    assert len(view.reported_running) == 12_000 and len(view.expected_end) == 12_000


async def test_a_report_that_cannot_be_stored_is_refused_and_changes_nothing(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    await h.clusters.join(JoinRequest(token=await h.tokens.issue(Role.JOIN, "big"), name="big"))
    await h.clusters.report("big", ClusterReport(nodes=NODES))
    before = await h.store.get(keys.report("big"))
    with pytest.raises(ReportTooLarge, match="30000 running jobs"):
        await h.clusters.report("big", ClusterReport(nodes=NODES, running=running(30_000, width=120)))
    assert await h.store.get(keys.report("big")) == before


async def test_an_agent_over_the_report_limits_sends_what_fits_and_the_rest_next(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("member_agent.agent.MAX_RUNNING_PER_REPORT", 2)
    monkeypatch.setattr("member_agent.agent.MAX_ITEMS_PER_REPORT", 1)
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    agent = await h.join("c1", [{"count": 1, "resources": {"cpu": 4}}])
    jobs = [await h.submit("t", cpu=1, runtime=1000, walltime=walltime) for walltime in (300, 100, 200)]
    await h.tick()
    assert len(agent.build_report().updates) == 1  # admissions and starts to tell, one per report
    for _ in range(3):
        await h.tick(1)
    assert {(await h.job(job)).state for job in jobs} == {JobState.RUNNING}  # the rest followed, in order
    stored = await h.store.get(keys.report("c1"))  # what the federation holds (later reports name it)
    assert stored is not None
    listed = [job_id for job_id, _, _ in LatestReport.from_bytes(stored.value).running]
    assert listed == [jobs[1], jobs[2]]  # the two that end soonest
