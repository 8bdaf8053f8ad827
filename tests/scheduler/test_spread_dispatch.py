"""A spread job goes to a cluster with a node for each of its tasks, and its agent uses one node per task."""

from __future__ import annotations

from federation.models import JobState
from tests.scheduler.conftest import HarnessFactory

QUEUES = {"queues": [{"name": "a"}]}


async def test_a_spread_job_goes_where_each_task_gets_a_node_of_its_own(make_harness: HarnessFactory) -> None:
    """``big`` is one 8-cpu node, ``wide`` two of 4: two 2-cpu tasks pack onto big (the fuller fit),
    spread they need wide."""
    h = await make_harness({}, QUEUES)
    await h.join("big", [{"count": 1, "resources": {"cpu": 8}}])
    await h.join("wide", [{"count": 2, "resources": {"cpu": 4}}])
    packed = await h.submit("t", cpu=2, replicas=2, runtime=1000)
    await h.tick()
    spread = await h.submit("t", cpu=2, replicas=2, runtime=1000, placement="spread")
    await h.tick()

    assert [(await h.job(j)).cluster for j in (packed, spread)] == ["big", "wide"]
    assert (await h.job(spread)).state is JobState.RUNNING
    nodes = [t.node for t in h.agents["wide"].backend.tasks() if t.job_id == spread]
    assert len(nodes) == 2 and len(set(nodes)) == 2


def test_a_spread_gang_counts_every_node_of_a_summarised_shape() -> None:
    """A cluster past the report's node limit is reported by shape: one entry of 4 one-cpu nodes. A
    spread gang of 3 half-cpu tasks has a node each there (Volcano's spread: one task per node); 5
    would fit packed (2.5 cpus) but not a node each. Counting one node per entry called the 3-task
    gang Unschedulable."""
    from federation.models import JobRecord, JobSpecBody
    from federation.models.cluster import ClusterReport, NodeReport
    from federation.scheduler.job_view import job_info
    from federation.scheduler.state import FederationState

    state = FederationState()
    state.set_cluster("c", {}, cordoned=False)
    shape = NodeReport(name="shape-0", count=4, allocatable={"cpu": 1}, free={"cpu": 1})
    state.set_report("c", 0.0, ClusterReport(nodes=[shape]))

    def spread(job_id: str, replicas: int) -> JobRecord:
        spec = JobSpecBody.model_validate(
            {"queue": "a", "placement": "spread", "tasks": [{"replicas": replicas, "resources": {"cpu": 0.5}}]}
        )
        return JobRecord(id=job_id, name=job_id, tenant="t", queue="a", spec=spec, submit_time=0.0)

    assert state.never_fits(job_info(spread("three", 3))) is None
    misfit = state.never_fits(job_info(spread("five", 5)))
    assert misfit is not None and misfit.part == "placement"
