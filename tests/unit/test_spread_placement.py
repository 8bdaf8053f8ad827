"""``spec.placement: spread`` puts each task of a job on a node of its own, in the member's session and in
the federation's choice of cluster; ``pack`` (the default) fills as few nodes as fit the job.

Worked examples on three 4-cpu nodes (the member's shipped conf packs: binpack weight 10), and a
property: however nodes are sized and loaded, a spread job never shares a node between two of its
tasks, and starts whenever enough nodes each have room for a task.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from federation.models import JobSpecBody
from member_agent.backends.base import NodeView
from member_agent.local_scheduler import DEFAULT_CONF, LocalScheduler
from member_agent.node_table import node_info
from member_agent.tracker import LocalJob
from policies import (
    JobInfo,
    ManualClock,
    NodeInfo,
    NodeShape,
    Snapshot,
    TaskInfo,
    close_session,
    load_conf,
    open_session,
)

NODES = [NodeView(f"n{i}", {"cpu": 4.0}) for i in range(3)]


def job(replicas: int, placement: str, cpu: float = 1.0) -> LocalJob:
    spec = JobSpecBody.model_validate(
        {"queue": "default", "placement": placement, "tasks": [{"replicas": replicas, "resources": {"cpu": cpu}}]}
    )
    return LocalJob("j", 1, queue="default", spec=spec)


def placed(plan_job: LocalJob, nodes: list[NodeView]) -> list[str]:
    plan = LocalScheduler(ManualClock(0.0)).plan([plan_job], [], nodes)
    return [node for _, placement in plan.launches for node in placement.values()]


def test_a_spread_job_takes_a_node_per_task_and_a_packed_one_fills_one_node() -> None:
    assert sorted(placed(job(3, "spread"), NODES)) == ["n0", "n1", "n2"]
    packed = placed(job(3, "pack"), NODES)
    assert len(packed) == 3 and len(set(packed)) == 1


def test_a_spread_gang_wider_than_the_nodes_waits_and_says_why() -> None:
    """The fourth task finds every node holding one of the first three; the gang then waits whole."""
    wide = JobInfo("j", "default", spread=True, tasks=[TaskInfo("j", "main", i, {"cpu": 1.0}) for i in range(4)])
    snapshot = Snapshot([node_info(n) for n in NODES], [wide])
    session = open_session(load_conf(DEFAULT_CONF), snapshot, ManualClock(0.0))
    session.run()
    decisions = close_session(session)
    assert decisions.binds == []
    messages = [reason.message for reason in decisions.reasons["j"]]
    assert "0/3 nodes can take cpu=1 now: 3 holding another of its tasks (placement: spread)" in messages
    assert messages[-1] == "only part of the gang of 4 fits now"


def test_a_spread_job_goes_around_a_node_that_is_full() -> None:
    busy = [NodeView("n0", {"cpu": 4.0}, {"cpu": 4.0}), *NODES[1:]]
    assert sorted(placed(job(2, "spread"), busy)) == ["n1", "n2"]
    assert placed(job(3, "spread"), busy) == []


@given(
    st.lists(st.tuples(st.sampled_from([1.0, 2.0, 4.0]), st.sampled_from([0.0, 1.0, 3.0])), min_size=1, max_size=6),
    st.integers(1, 6),
    st.sampled_from([0.5, 1.0, 2.0]),
)
def test_a_spread_job_never_shares_a_node_and_starts_when_enough_nodes_have_room(
    sizes: list[tuple[float, float]], replicas: int, cpu: float
) -> None:
    nodes = [NodeView(f"n{i}", {"cpu": size}, {"cpu": min(used, size)}) for i, (size, used) in enumerate(sizes)]
    roomy = sum(1 for n in nodes if n.allocatable["cpu"] - n.used["cpu"] >= cpu)
    chosen = placed(job(replicas, "spread", cpu), nodes)
    assert len(chosen) == len(set(chosen))
    assert len(chosen) == (replicas if roomy >= replicas else 0)


def cluster(*free: float) -> NodeInfo:
    """A member cluster as the federation sees it: one 4-cpu node per entry, with that much free."""
    return NodeInfo("c", {}, shapes=[NodeShape({"cpu": 4.0}, {"cpu": cpu}, 1) for cpu in free])


def test_the_federation_counts_a_node_per_task_of_a_spread_job() -> None:
    """Two 1-cpu tasks fit one free node packed; spread they need two nodes with a cpu each."""
    two = [({"cpu": 1.0}, 2)]
    assert cluster(4.0).packs(two) and not cluster(4.0).packs(two, spread=True)
    assert cluster(4.0, 1.0).packs(two, spread=True)
    assert not cluster(4.0, 0.5).packs(two, spread=True)
    mixed = [({"cpu": 3.0}, 1), ({"cpu": 1.0}, 2)]  # the big task first, on the fullest node it fits
    assert cluster(3.0, 1.0, 1.0).packs(mixed, spread=True)
    assert not cluster(3.0, 1.0).packs(mixed, spread=True)


def test_a_lone_node_holds_one_task_of_a_spread_job_at_most() -> None:
    node = NodeInfo("n", {"cpu": 4.0})
    assert node.packs([({"cpu": 1.0}, 1)], spread=True) and not node.packs([({"cpu": 1.0}, 2)], spread=True)


def test_a_spread_job_has_judgements_of_its_own() -> None:
    """Where its own tasks are changes which nodes suit a spread job: no other job may share its
    judgements of nodes (of clusters it may: their nodes are not told apart)."""
    from policies.framework.placement import Placer

    task = TaskInfo("a", "main", 0, {"cpu": 1.0})
    spread_a, spread_b = JobInfo("a", "q", spread=True), JobInfo("b", "q", spread=True)
    packed_a, packed_b = JobInfo("a", "q"), JobInfo("b", "q")
    assert Placer.signature(task, packed_a) == Placer.signature(task, packed_b)
    assert len({Placer.signature(task, j) for j in (spread_a, spread_b, packed_a)}) == 3
    clusters = {Placer.signature(task, j, nodes_apart=False) for j in (spread_a, spread_b, packed_a)}
    assert len(clusters) == 1  # a cluster's nodes are counted by packs, not judged per job
