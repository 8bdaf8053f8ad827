"""Issue 32 acceptance 2: the federation never plans what the member session could not place.

Random clusters of node shapes and random gangs (replicas, minAvailable, pack or spread) go through
the production global cycle (``GlobalScheduler.plan`` over ``FederationState``); every dispatch and
every reservation it plans is then handed to the member's own session (configs/scheduler.yaml, the
agent's default conf) on the cluster's nodes, one ``NodeInfo`` a node:
- the jobs the plan dispatches to a cluster, all at once on its empty nodes, each get their gang
  placed there (Volcano's gang rule: minAvailable tasks bound, or the job does not start);
- a job the plan reserves for can be placed there alone once the cluster is empty (a reservation for
  a job that can never run would hold capacity for ever);
- a job the plan calls Unschedulable cannot be placed on any empty cluster.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.config import FederationConfig
from federation.models import JobRecord, JobSpecBody, QueueTree
from federation.models.cluster import ClusterReport, NodeReport, RunningJob
from federation.models.queue import QueueTreeConfig
from federation.scheduler.cycle import GlobalScheduler
from federation.scheduler.state import FederationState
from member_agent.local_scheduler import DEFAULT_CONF
from policies import JobInfo, NodeInfo, Snapshot, TaskInfo, close_session, load_conf, open_session
from policies.clock import ManualClock

NOW = 1000.0
QUEUES = QueueTreeConfig.model_validate({"queues": [{"name": "a"}]})
MEMBER = load_conf(DEFAULT_CONF)

Shape = tuple[int, int]  # (cpus a node, nodes)
Gang = tuple[int, int, int, bool]  # (replicas, cpus a task, minAvailable or 0, spread)

shapes = st.lists(st.tuples(st.integers(1, 16), st.integers(1, 5)), min_size=1, max_size=3)
gangs = st.lists(
    st.tuples(st.integers(1, 8), st.integers(1, 16), st.integers(0, 8), st.booleans()), min_size=1, max_size=6
)


def _record(n: int, gang: Gang) -> JobRecord:
    replicas, cpus, min_available, spread = gang
    spec = JobSpecBody.model_validate(
        {
            "queue": "a",
            "walltime": 100 + n,
            "minAvailable": min(min_available, replicas) or None,
            "placement": "spread" if spread else "pack",
            "tasks": [{"name": "w", "replicas": replicas, "resources": {"cpu": cpus}}],
        }
    )
    return JobRecord(id=f"j{n}", name=f"j{n}", tenant="t", queue="a", spec=spec, submit_time=float(n))


def _nodes(cluster: list[Shape]) -> list[NodeInfo]:
    return [NodeInfo(f"n{k}-{i}", {"cpu": float(cpu)}) for k, (cpu, count) in enumerate(cluster) for i in range(count)]


def _member_places(cluster: list[Shape], jobs: list[JobInfo]) -> set[str]:
    """The jobs whose gang the member session places, all of ``jobs`` pending at once on the empty nodes."""
    pending = [
        JobInfo(
            j.id,
            "default",
            j.tenant,
            j.priority,
            j.submit_time,
            j.min_available,
            j.preemptible,
            j.walltime,
            tasks=[TaskInfo(j.id, t.name, t.index, t.resources) for t in j.tasks],
            spread=j.spread,
        )
        for j in jobs
    ]
    session = open_session(MEMBER, Snapshot(_nodes(cluster), pending), ManualClock(NOW))
    session.run()
    decisions = close_session(session)
    bound: dict[str, int] = {}
    for bind in decisions.binds:
        bound[bind.job] = bound.get(bind.job, 0) + 1
    return {j.id for j in jobs if bound.get(j.id, 0) >= j.gang_size}


@settings(max_examples=400, deadline=None)
@given(clusters=st.lists(shapes, min_size=1, max_size=2), gangs=gangs, busy=st.booleans())
def test_the_federation_plans_only_what_the_member_session_places(
    clusters: list[list[Shape]], gangs: list[Gang], busy: bool
) -> None:
    state = FederationState()
    state.set_queues(QueueTree(QUEUES))
    for c, cluster in enumerate(clusters):
        name = f"c{c}"
        state.set_cluster(name, {}, cordoned=False)
        nodes = [
            NodeReport(name=f"s{k}", count=count, allocatable={"cpu": cpu}, free={"cpu": cpu})
            for k, (cpu, count) in enumerate(cluster)
        ]
        if busy:  # every node of the first shape full until 500: reservations wait for it
            cpu, count = cluster[0]
            nodes[0] = NodeReport(name="s0", count=count, allocatable={"cpu": cpu}, free={"cpu": 0})
        running = (
            [RunningJob(job_id=f"r{c}", epoch=1, resources={}, started_at=0.0, expected_end=500.0)] if busy else []
        )
        state.set_report(name, NOW, ClusterReport(nodes=nodes, running=running))
    records = [_record(n, gang) for n, gang in enumerate(gangs)]
    for record in records:
        state.upsert_job(record, 1, b"")
    config = FederationConfig.model_validate({"reservation": {"depth": "all"}})
    plan = GlobalScheduler(config, ManualClock(NOW)).plan(state)
    infos = {r.id: state.entries[r.id].info for r in records}
    by_cluster: dict[str, list[JobInfo]] = {}
    for job_id, cluster in plan.dispatches:
        by_cluster.setdefault(cluster, []).append(infos[job_id])
    for cluster, jobs in by_cluster.items():
        index = int(cluster[1:])
        shapes_now = [(0 if busy and k == 0 else cpu, count) for k, (cpu, count) in enumerate(clusters[index])]
        shapes_now = [(cpu, count) for cpu, count in shapes_now if cpu]
        placed = _member_places(shapes_now, jobs)
        assert placed == {j.id for j in jobs}, f"{cluster}: planned {[j.id for j in jobs]}, member placed {placed}"
    for job_id, reservation in plan.reservations.items():
        for cluster in reservation.nodes:
            assert _member_places(clusters[int(cluster[1:])], [infos[job_id]]), f"{job_id} reserved on {cluster}"
    for job_id in plan.unschedulable:
        assert not any(_member_places(cluster, [infos[job_id]]) for cluster in clusters), job_id
