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
