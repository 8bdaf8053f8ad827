"""``FederationState.may_act``: the simulator skips a global cycle it says cannot act, so it must
never say so when the full cycle would dispatch, evict (reclaim) or find a job Unschedulable.

Worked examples show each clause doing its work; the property runs the real global cycle on random
federations (clusters cordoned, lost or never reported, node shapes, gangs, label selectors, guarantees,
preemptible borrowers) and checks that every state called idle gives an empty plan.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from federation.config import FederationConfig
from federation.models import JobRecord, JobSpecBody, JobState, QueueTree, TaskSpec
from federation.models.cluster import ClusterReport, NodeReport, RunningJob
from federation.models.queue import QueueTreeConfig
from federation.scheduler.cycle import CyclePlan, GlobalScheduler
from federation.scheduler.state import FederationState
from policies.clock import ManualClock

NOW = 1000.0
LOST_AFTER = 60.0
QUEUES = QueueTreeConfig.model_validate(
    {"queues": [{"name": "a", "acceptSurplus": True}, {"name": "b", "guarantee": {"cpu": 4}}]}
)
CONFIG = FederationConfig.model_validate({"reclaim": {"grace": "0s", "maxPerMinute": 100}})


def _record(
    job_id: str,
    cpus: list[float],
    queue: str = "a",
    *,
    state: JobState = JobState.PENDING,
    cluster: str = "",
    preemptible: bool = False,
    selector: dict[str, str] | None = None,
    min_available: int | None = None,
) -> JobRecord:
    tasks = [TaskSpec(name=f"t{i}", resources={"cpu": c}) for i, c in enumerate(cpus)]
    spec = JobSpecBody.model_validate(
        {
            "queue": queue,
            "tasks": tasks,
            "preemptible": preemptible,
            "clusterSelector": selector or {},
            "minAvailable": min_available,
        }
    )
    on_cluster = state is JobState.RUNNING
    return JobRecord(
        id=job_id,
        name=job_id,
        tenant="t",
        queue=queue,
        spec=spec,
        submit_time=0.0,
        state=state,
        cluster=cluster,
        epoch=1 if on_cluster else 0,
        start_time=0.0 if on_cluster else None,
    )


def _federation(clusters: dict[str, list[float]]) -> FederationState:
    """Clusters reported just now, each node of 4 cpus with the given free cpus, labelled zone=<name>."""
    state = FederationState()
    state.set_queues(QueueTree(QUEUES))
    for name, free in clusters.items():
        state.set_cluster(name, {"zone": name}, cordoned=False)
        nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": 4.0}, free={"cpu": f}) for i, f in enumerate(free)]
        state.set_report(name, NOW, ClusterReport(nodes=nodes))
    return state


def _plan(state: FederationState) -> CyclePlan:
    return GlobalScheduler(CONFIG, ManualClock(NOW)).plan(state)


def _acts(plan: CyclePlan) -> bool:
    return bool(plan.dispatches or plan.evictions or plan.unschedulable)


def test_idle_when_no_pending_job_fits_the_idle_capacity() -> None:
    state = _federation({"x": [2.0, 1.0]})
    state.upsert_job(_record("big", [4.0]), 1, b"")  # fits a node, but no node is free enough now
    state.upsert_job(_record("gang", [1.0, 1.0, 1.0, 1.0]), 2, b"")  # 4 cpus at once: only 3 idle
    assert not state.may_act(NOW, LOST_AFTER)
    assert not _acts(_plan(state))
    freed = NodeReport(name="n0", allocatable={"cpu": 4.0}, free={"cpu": 4.0})
    state.set_report("x", NOW, ClusterReport(nodes=[freed]))
    assert state.may_act(NOW, LOST_AFTER)
    assert _plan(state).dispatches


def test_an_elastic_job_whose_gang_fits_keeps_the_cycle() -> None:
    # 3 cpus idle; the job has 6 tasks of 1 cpu but minAvailable 2: it is dispatched by its gang
    # (Volcano's gang rule; the placer charges only the gang), so the cycle may act though all 6 never fit.
    state = _federation({"x": [2.0, 1.0]})
    state.upsert_job(_record("elastic", [1.0] * 6, min_available=2), 1, b"")
    assert state.may_act(NOW, LOST_AFTER)
    assert _plan(state).dispatches == [("elastic", "x")]


def test_a_preemptible_borrower_keeps_the_cycle_for_reclaim() -> None:
    state = _federation({"x": [0.0, 0.0]})
    for n in range(2):
        state.upsert_job(_record(f"r{n}", [4.0], state=JobState.RUNNING, cluster="x", preemptible=True), n + 1, b"")
    state.upsert_job(_record("owed", [4.0], "b"), 3, b"")  # b is owed its guarantee of 4 cpus
    assert state.may_act(NOW, LOST_AFTER)
    assert _plan(state).evictions


def test_a_job_no_cluster_could_hold_keeps_the_cycle_to_mark_it() -> None:
    state = _federation({"x": [0.0]})
    state.upsert_job(_record("nowhere", [1.0], selector={"zone": "mars"}), 1, b"")
    assert state.may_act(NOW, LOST_AFTER)
    assert "nowhere" in _plan(state).unschedulable


_job = st.tuples(
    st.lists(st.sampled_from([1.0, 2.0, 4.0, 5.0]), min_size=1, max_size=3),  # task cpus (5: bigger than any node)
    st.sampled_from(["a", "b"]),
    st.sampled_from([None, None, "x", "y", "mars"]),  # clusterSelector zone
)
_cluster = st.tuples(
    st.lists(st.sampled_from([0.0, 1.0, 4.0, 4.0]), min_size=1, max_size=3),  # free cpus per 4-cpu node
    st.sampled_from(["fresh", "lost", "unreported", "cordoned"]),
)


@settings(max_examples=300, deadline=None)
@example(((([4.0], "fresh"), ([0.0], "unreported"))), [([4.0], "b", None)], [("x", "a", True)])  # reclaim
@given(
    st.tuples(_cluster, _cluster),
    st.lists(_job, max_size=5),
    st.lists(st.tuples(st.sampled_from(["x", "y"]), st.sampled_from(["a", "b"]), st.booleans()), max_size=4),
)
def test_a_state_called_idle_plans_nothing(
    clusters: tuple[tuple[list[float], str], ...],
    pending: list[tuple[list[float], str, str | None]],
    running: list[tuple[str, str, bool]],
) -> None:
    state = FederationState()
    state.set_queues(QueueTree(QUEUES))
    revision = 0
    frees = {name: list(free) for name, (free, _) in zip(("x", "y"), clusters, strict=True)}
    shown: dict[str, list[RunningJob]] = {"x": [], "y": []}
    for n, (cluster, queue, preemptible) in enumerate(running):  # each on a whole free node, if one is left
        if 4.0 in frees[cluster]:
            frees[cluster][frees[cluster].index(4.0)] = 0.0
            revision += 1
            record = _record(f"r{n}", [4.0], queue, state=JobState.RUNNING, cluster=cluster, preemptible=preemptible)
            state.upsert_job(record, revision, b"")
            shown[cluster].append(RunningJob(job_id=f"r{n}", epoch=1, resources={"cpu": 4.0}))
    for name, (_, condition) in zip(("x", "y"), clusters, strict=True):
        state.set_cluster(name, {"zone": name}, cordoned=condition == "cordoned")
        if condition != "unreported":
            nodes = [
                NodeReport(name=f"n{i}", allocatable={"cpu": 4.0}, free={"cpu": f}) for i, f in enumerate(frees[name])
            ]
            at = NOW - 2 * LOST_AFTER if condition == "lost" else NOW
            state.set_report(name, at, ClusterReport(nodes=nodes, running=shown[name]))
    for n, (cpus, queue, zone) in enumerate(pending):
        revision += 1
        selector = None if zone is None else {"zone": zone}
        state.upsert_job(_record(f"p{n}", cpus, queue, selector=selector), revision, b"")
    if not state.may_act(NOW, LOST_AFTER):
        assert not _acts(_plan(state))
