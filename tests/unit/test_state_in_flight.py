"""What FederationState keeps between cycles instead of rebuilding it every cycle.

In-flight dispatches are charged against a cluster's reported capacity once, what the jobs on
clusters hold is totalled per (queue, tenant) as they come and go, and each cluster's running jobs
and when they end (for reservations) are kept until one arrives, starts, leaves or gets a new
expected end. All must always equal a rebuild:
the worked example checks the figures, the property checks the incremental upkeep against a rebuild
after every step of random dispatches, starts, reports, requeues, ends and clusters leaving and rejoining.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.models import JobState
from federation.models.cluster import ClusterReport, NodeReport, RunningJob
from federation.scheduler.state import FederationState
from tests.unit.records import job_record

CPU = 4.0


def _report(free: list[float], running: list[tuple[str, int, float | None]]) -> ClusterReport:
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": CPU}, free={"cpu": f}, count=1) for i, f in enumerate(free)]
    shown = [RunningJob(job_id=j, epoch=e, resources={}, expected_end=end) for j, e, end in running]
    return ClusterReport(nodes=nodes, running=shown)


def _idle(state: FederationState) -> dict[str, list[tuple[float, int]]]:
    """Per cluster: (idle cpu, count) of each node shape in a snapshot."""
    out = {}
    for node in state.snapshot(0.0, 60.0).nodes:
        assert node.shapes is not None
        counts: dict[float, int] = {}
        for shape in node.shapes:
            idle = shape.idle.get("cpu", 0.0)
            counts[idle] = counts.get(idle, 0) + shape.count
        out[node.name] = sorted((idle, n) for idle, n in counts.items() if n)
    return out


def _summed(state: FederationState) -> dict[tuple[str, str], dict[str, float]]:
    """What the snapshot's running jobs hold per (queue, tenant), summed from scratch."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for job in state.snapshot(0.0, 60.0).jobs:
        lane = out.setdefault((job.queue, job.tenant), {})
        for task in job.tasks:
            for name, amount in task.resources.items():
                lane[name] = lane.get(name, 0.0) + amount
    return out


def _rebuilt(state: FederationState) -> dict[str, list[tuple[float, int]]]:
    for view in state.clusters.values():
        view.room = None
    return _idle(state)


Ends = tuple[list[tuple[str, str, float | None]], dict[str, tuple[list[float], list[dict[str, float]]]]]


def _ends(state: FederationState) -> Ends:
    """The snapshot's running tasks (job, cluster, expected end) and each cluster's releases."""
    snapshot = state.snapshot(0.0, 60.0)
    tasks = sorted(((t.job, t.node, t.expected_end) for j in snapshot.jobs for t in j.tasks), key=str)
    assert snapshot.releases is not None
    return tasks, {name: (r.times, r.amounts) for name, r in snapshot.releases.items()}


def _ends_rebuilt(state: FederationState) -> Ends:
    for view in state.clusters.values():
        view.releases = None
    return _ends(state)


def test_in_flight_dispatches_are_held_until_the_report_shows_them() -> None:
    state = FederationState()
    state.set_cluster("c", {}, cordoned=False)
    state.set_report("c", 0.0, _report([CPU, CPU], []))
    state.upsert_job(job_record("a", [3.0], JobState.PENDING), 1, b"")
    state.upsert_job(job_record("b", [2.0, 2.0], JobState.PENDING), 2, b"")
    assert _idle(state) == {"c": [(4.0, 2)]}

    state.upsert_job(job_record("a", [3.0], JobState.DISPATCHED, "c", 1), 3, b"")
    assert _idle(state) == {"c": [(1.0, 1), (4.0, 1)]}
    state.upsert_job(job_record("b", [2.0, 2.0], JobState.DISPATCHED, "c", 1), 4, b"")
    assert _idle(state) == {"c": [(0.0, 1), (1.0, 1)]}  # b's tasks packed on the free node

    # The agent now reports a running (its 3 cpu gone from free); b is still in flight.
    state.set_report("c", 1.0, _report([1.0, CPU], [("a", 1, None)]))
    assert _idle(state) == {"c": [(0.0, 1), (1.0, 1)]}

    # b is requeued before its cluster saw it: its hold goes with it.
    state.upsert_job(job_record("b", [2.0, 2.0], JobState.PENDING), 5, b"")
    assert _idle(state) == {"c": [(1.0, 1), (4.0, 1)]}


def test_reservations_see_a_start_a_reported_end_and_an_end() -> None:
    state = FederationState()
    state.set_cluster("c", {}, cordoned=False)
    state.set_report("c", 0.0, _report([CPU], []))
    state.upsert_job(job_record("a", [1.0], JobState.PENDING, walltime=100.0), 1, b"")
    state.upsert_job(job_record("a", [1.0], JobState.DISPATCHED, "c", 1, walltime=100.0), 2, b"")
    assert _ends(state) == ([("a", "c", None)], {"c": ([], [])})  # not started: no known end
    state.upsert_job(job_record("a", [1.0], JobState.RUNNING, "c", 1, start_time=5.0, walltime=100.0), 3, b"")
    assert _ends(state) == ([("a", "c", 105.0)], {"c": ([105.0], [{"cpu": 1.0}])})  # start + walltime
    state.set_report("c", 6.0, _report([3.0], [("a", 1, 90.0)]))
    assert _ends(state) == ([("a", "c", 90.0)], {"c": ([90.0], [{"cpu": 1.0}])})  # the agent knows better
    state.remove_job("a")
    assert _ends(state) == ([], {"c": ([], [])})


def test_reservations_see_a_job_a_rejoined_cluster_reports_again() -> None:
    """The cluster leaves and joins again empty; the job's next version puts it back on the cluster."""
    state = FederationState()
    state.set_cluster("c", {}, cordoned=False)
    state.set_report("c", 0.0, _report([CPU], []))
    running = job_record("a", [1.0], JobState.RUNNING, "c", 1, start_time=5.0, walltime=100.0)
    state.upsert_job(running, 1, b"")
    state.remove_cluster("c")
    state.set_cluster("c", {}, cordoned=False)
    assert _ends(state) == ([], {"c": ([], [])})
    state.upsert_job(running, 2, b"")
    assert _ends(state) == ([("a", "c", 105.0)], {"c": ([105.0], [{"cpu": 1.0}])})


_step = st.one_of(
    st.tuples(st.just("dispatch"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("start"), st.integers(0, 2), st.integers(0, 50)),
    st.tuples(st.just("report"), st.integers(0, 1), st.integers(0, 63)),
    st.tuples(st.just("requeue"), st.integers(0, 2), st.just(0)),
    st.tuples(st.just("end"), st.integers(0, 2), st.just(0)),
    st.tuples(st.just("rejoin"), st.integers(0, 1), st.just(0)),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_step, max_size=25),
    st.lists(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=1, max_size=3), min_size=3, max_size=3),
)
def test_kept_capacity_always_equals_a_rebuild(steps: list[tuple[str, int, int]], sizes: list[list[float]]) -> None:
    state = FederationState()
    for cluster in ("c0", "c1"):
        state.set_cluster(cluster, {}, cordoned=False)
        state.set_report(cluster, 0.0, _report([CPU, CPU, CPU], []))
    jobs = {f"j{n}": cpus for n, cpus in enumerate(sizes)}
    walltime = {job_id: 100.0 * (n + 1) for n, job_id in enumerate(jobs)}
    epochs = dict.fromkeys(jobs, 0)
    revision = 0
    for job_id, cpus in jobs.items():
        revision += 1
        state.upsert_job(job_record(job_id, cpus, JobState.PENDING, walltime=walltime[job_id]), revision, b"")
    for kind, n, arg in steps:
        job_id = f"j{n}"
        revision += 1
        entry = state.entries.get(job_id)
        if kind == "dispatch" and entry is not None and entry.state is JobState.PENDING:
            epochs[job_id] += 1
            record = job_record(
                job_id, jobs[job_id], JobState.DISPATCHED, f"c{arg}", epochs[job_id], walltime=walltime[job_id]
            )
            state.upsert_job(record, revision, b"")
        elif kind == "start" and entry is not None and entry.cluster:
            record = job_record(
                job_id,
                jobs[job_id],
                JobState.RUNNING,
                entry.cluster,
                entry.epoch,
                start_time=float(arg),
                walltime=walltime[job_id],
            )
            state.upsert_job(record, revision, b"")
        elif kind == "report":
            cluster = f"c{n}"
            on = [(j, e.epoch, float(revision + arg)) for j, e in state.entries.items() if e.cluster == cluster]
            # a random subset is already running, some with an expected end, some without
            shown = [(j, e, end if arg >> (i + 3) & 1 else None) for i, (j, e, end) in enumerate(on) if arg >> i & 1]
            state.set_report(cluster, 0.0, _report([CPU, CPU, CPU], shown))
        elif kind == "requeue" and entry is not None and entry.cluster:
            state.upsert_job(
                job_record(job_id, jobs[job_id], JobState.PENDING, walltime=walltime[job_id]), revision, b""
            )
        elif kind == "end" and entry is not None:
            state.remove_job(job_id)
        elif kind == "rejoin":  # the cluster is removed (its jobs with it) and joins again, empty
            state.remove_cluster(f"c{n}")
            state.set_cluster(f"c{n}", {}, cordoned=False)
            state.set_report(f"c{n}", 0.0, _report([CPU, CPU, CPU], []))
        assert state.held == _summed(state)
        kept = _idle(state)
        assert kept == _rebuilt(state)
        ends = _ends(state)
        assert ends == _ends_rebuilt(state)
