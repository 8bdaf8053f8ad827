"""Property tests: the promises every session keeps, whatever the input."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from policy_builders import conf, job, node, occupy, run, run_on

from policies import (
    Claim,
    Decisions,
    JobInfo,
    ManualClock,
    NodeInfo,
    NodeShape,
    QueueInfo,
    Snapshot,
    TaskStatus,
    close_session,
    divide_tree,
    open_session,
    pie_spin,
    water_fill,
)
from policies.resources import EPS

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOCAL_TIERS = (
    ["priority", "gang", "conformance"],
    [
        {"name": "drf", "enablePreemptable": False},
        "predicates",
        "proportion",
        {"name": "reservation", "arguments": {"after": 0}},
        "binpack",
    ],
)


@st.composite
def worlds(draw: st.DrawFn) -> Snapshot:
    """A few nodes, some running work with expected ends, and pending gangs in two queues."""
    n_nodes = draw(st.integers(1, 6))
    nodes = [
        node(f"n{i}", cpu=draw(st.sampled_from([2, 4, 8])), memory=draw(st.sampled_from([4, 16])))
        for i in range(n_nodes)
    ]
    jobs: list[JobInfo] = []
    for r in range(draw(st.integers(0, 6))):
        where = draw(st.sampled_from(nodes))
        cpu = draw(st.sampled_from([1, 2]))
        if where.idle["cpu"] < cpu or where.idle["memory"] < 2:
            continue
        running = job(
            f"r{r}",
            cpu=cpu,
            memory=2,
            queue=draw(st.sampled_from(["a", "b"])),
            priority=draw(st.integers(0, 2)),
            preemptible=draw(st.booleans()),
            walltime=100,
        )
        run_on(running, [where.name], start=-50, end=draw(st.sampled_from([10.0, 40.0, 80.0])))
        occupy(nodes, [running])
        jobs.append(running)
    for p in range(draw(st.integers(1, 10))):
        size = draw(st.integers(1, 4))
        jobs.append(
            job(
                f"p{p}",
                tasks=size,
                cpu=draw(st.sampled_from([1, 2, 3])),
                memory=draw(st.sampled_from([1, 2, 4])),
                queue=draw(st.sampled_from(["a", "b"])),
                priority=draw(st.integers(0, 3)),
                submit=-100 + p,
                min_available=draw(st.integers(1, size)),
                walltime=draw(st.sampled_from([5.0, 30.0, 60.0, None])),
            )
        )
    queues = {
        "a": QueueInfo("a", weight=draw(st.integers(1, 3)), guarantee={"cpu": float(draw(st.integers(0, 4)))}),
        "b": QueueInfo("b", weight=draw(st.integers(1, 3)), guarantee={"cpu": float(draw(st.integers(0, 4)))}),
    }
    return Snapshot(nodes, jobs, queues)


def _held(snapshot: Snapshot) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {n.name: {} for n in snapshot.nodes}
    for j in snapshot.jobs:
        for t in j.tasks:
            if t.status == TaskStatus.RUNNING:
                for r, q in t.resources.items():
                    out[t.node][r] = out[t.node].get(r, 0.0) + q
    return out


def _tasks(snapshot: Snapshot) -> dict[str, tuple[JobInfo, dict[str, float]]]:
    return {t.uid: (j, t.resources) for j in snapshot.jobs for t in j.tasks}


def _assert_no_overallocation(snapshot: Snapshot, d: Decisions) -> None:
    tasks = _tasks(snapshot)
    load = _held(snapshot)
    evicted = {e.task for e in d.evictions}
    for b in d.binds + d.pipelined:
        for r, q in tasks[b.task][1].items():
            load[b.node][r] = load[b.node].get(r, 0.0) + q
    for e in d.evictions:  # pipelined work lands where evicted work leaves
        for r, q in tasks[e.task][1].items():
            load[e.node][r] -= q
    for n in snapshot.nodes:
        for r, q in load[n.name].items():
            assert q <= n.allocatable.get(r, 0.0) + EPS, (n.name, r, q)
    assert not evicted & {b.task for b in d.binds}


@SETTINGS
@given(worlds(), st.sampled_from(["enqueue, allocate, preempt, backfill", "allocate, reclaim, backfill"]))
def test_no_node_is_ever_over_allocated(world: Snapshot, actions: str) -> None:
    d = run(conf(actions, *LOCAL_TIERS, reclaim={"gracePeriod": 0}), world)
    _assert_no_overallocation(world, d)


@SETTINGS
@given(worlds())
def test_a_gang_is_placed_with_at_least_min_available_or_not_at_all(world: Snapshot) -> None:
    d = run(conf("enqueue, allocate, backfill", *LOCAL_TIERS), world)
    placed: dict[str, int] = {}
    for b in d.binds + d.pipelined:
        placed[b.job] = placed.get(b.job, 0) + 1
    for j in world.jobs:
        if j.id in placed:
            assert placed[j.id] >= j.gang_size, (j.id, placed[j.id], j.gang_size)


@SETTINGS
@given(worlds(), st.sampled_from([1, 2, "all"]))
def test_backfill_never_delays_any_reservation(world: Snapshot, depth: object) -> None:
    d = run(conf("allocate, backfill", *LOCAL_TIERS, backfill={"depth": depth}), world)
    tasks = _tasks(world)
    intervals: dict[str, list[tuple[float, float, dict[str, float]]]] = {n.name: [] for n in world.nodes}
    for j in world.jobs:
        for t in j.tasks:
            if t.status == TaskStatus.RUNNING:
                intervals[t.node].append((-math.inf, t.expected_end or math.inf, t.resources))
    for b in d.binds:
        j, resources = tasks[b.task]
        intervals[b.node].append((0.0, j.walltime if j.walltime is not None else math.inf, resources))
    for rsv in d.reservations:
        for name, count in rsv.nodes.items():
            intervals[name].append((rsv.start, rsv.end, {r: q * count for r, q in rsv.per_task.items()}))
    for n in world.nodes:
        for t0 in {s for s, _, _ in intervals[n.name] if s >= 0} | {0.0}:
            for r, cap in n.allocatable.items():
                used = sum(res.get(r, 0.0) for s, e, res in intervals[n.name] if s <= t0 < e)
                assert used <= cap + EPS, (n.name, r, t0, used, cap)


@SETTINGS
@given(worlds())
def test_preempt_and_reclaim_spare_non_preemptible_jobs_and_guarantees(world: Snapshot) -> None:
    actions = "allocate, preempt, reclaim"
    d = run(conf(actions, *LOCAL_TIERS, reclaim={"gracePeriod": 0, "maxEvictions": 100}), world)
    tasks = _tasks(world)
    freed: dict[str, float] = {}
    for e in d.evictions:
        j, resources = tasks[e.task]
        assert j.preemptible
        if e.reason == "reclaimed":
            freed[j.queue] = freed.get(j.queue, 0.0) + resources["cpu"]
    for queue, amount in freed.items():
        held = sum(
            t.resources["cpu"]
            for j in world.jobs
            if j.queue == queue
            for t in j.tasks
            if t.status == TaskStatus.RUNNING
        )
        assert held - amount >= world.queues[queue].guarantee.get("cpu", 0.0) - EPS


@st.composite
def claims(draw: st.DrawFn) -> tuple[float, list[float], list[float], list[float]]:
    n = draw(st.integers(1, 6))
    capacity = draw(st.floats(0, 100))
    ceilings = [draw(st.floats(0, 60)) for _ in range(n)]
    floors = [draw(st.floats(0, 30)) for _ in range(n)]
    weights = [draw(st.floats(0.1, 10)) for _ in range(n)]
    return capacity, floors, ceilings, weights


@SETTINGS
@given(claims())
def test_deserved_shares_never_exceed_the_total_and_respect_guarantees_and_caps(
    c: tuple[float, list[float], list[float], list[float]],
) -> None:
    capacity, floors, ceilings, weights = c
    got = water_fill(capacity, floors, ceilings, weights)
    assert sum(got) <= capacity + 1e-6
    floor_total = sum(min(f, cap) for f, cap in zip(floors, ceilings, strict=True))
    for g, f, cap in zip(got, floors, ceilings, strict=True):
        assert g <= cap + 1e-6
        if floor_total <= capacity:
            assert g >= min(f, cap) - 1e-6
    # Work-conserving: capacity is left only when every claim is at its ceiling.
    if sum(got) < capacity - 1e-6:
        assert all(g >= cap - 1e-6 for g, cap in zip(got, ceilings, strict=True))


@SETTINGS
@given(st.floats(0, 1000), st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 400), min_size=1), st.data())
def test_fair_share_slices_sum_to_the_capacity_handed_out(
    capacity: float, demands: dict[str, float], data: st.DataObject
) -> None:
    eups = {k: data.draw(st.floats(0.5, 1000)) for k in demands}
    slices = pie_spin(capacity, demands, eups)
    assert sum(slices.values()) == pytest.approx(min(capacity, sum(demands.values())), abs=1e-5)
    assert all(slices[k] <= demands[k] + 1e-6 for k in demands)


@SETTINGS
@given(st.data())
def test_tree_shares_sum_to_their_parent_and_respect_caps(data: st.DataObject) -> None:
    leaves = ["a.x", "a.y", "b.x", "b.y"]
    claims_ = {}
    for q in leaves:
        cap = data.draw(st.one_of(st.none(), st.floats(0, 50)))
        claims_[q] = Claim(
            data.draw(st.floats(0.1, 5)),
            {"cpu": data.draw(st.floats(0, 20))},
            None if cap is None else {"cpu": cap},
            data.draw(st.booleans()),
            {"cpu": data.draw(st.floats(0, 80))},
        )
    for top in ("a", "b"):
        kids = [claims_[f"{top}.x"], claims_[f"{top}.y"]]
        claims_[top] = Claim(
            1, {"cpu": data.draw(st.floats(0, 20))}, None, True, {"cpu": sum(k.request["cpu"] for k in kids)}
        )
    capacity = data.draw(st.floats(0, 150))
    shares = divide_tree({"cpu": capacity}, claims_, {"": ["a", "b"], "a": ["a.x", "a.y"], "b": ["b.x", "b.y"]})
    assert shares["a"]["cpu"] + shares["b"]["cpu"] <= capacity + 1e-6
    for top in ("a", "b"):
        assert shares[f"{top}.x"]["cpu"] + shares[f"{top}.y"]["cpu"] <= shares[top]["cpu"] + 1e-6
    for q in leaves:
        cap = claims_[q].cap
        if cap is not None:
            assert shares[q]["cpu"] <= cap["cpu"] + 1e-6
        if not claims_[q].accept_surplus:
            assert shares[q]["cpu"] <= claims_[q].guarantee["cpu"] + 1e-6


@st.composite
def federations(draw: st.DrawFn) -> Snapshot:
    clusters = []
    for c in range(draw(st.integers(1, 4))):
        shapes = [
            NodeShape({"cpu": 8.0}, {"cpu": float(draw(st.integers(0, 8)))}, draw(st.integers(0, 3)))
            for _ in range(draw(st.integers(1, 3)))
        ]
        clusters.append(NodeInfo(f"c{c}", {}, shapes=shapes))
    jobs = [
        job(f"j{i}", tasks=draw(st.integers(1, 4)), cpu=draw(st.integers(1, 8)), submit=-10 + i, walltime=60)
        for i in range(draw(st.integers(1, 12)))
    ]
    return Snapshot(clusters, jobs)


@SETTINGS
@given(federations())
def test_no_cluster_is_over_allocated_and_every_job_lands_on_one_cluster(world: Snapshot) -> None:
    c = conf("allocate, backfill", *LOCAL_TIERS, placement="job")
    ssn = open_session(c, world, ManualClock(0))
    ssn.run()
    for cluster in ssn.nodes:
        assert cluster.shapes is not None
        for shape in cluster.shapes:
            assert shape.count >= 0
            if shape.count:
                assert all(q >= -EPS for q in shape.idle.values())
    d = close_session(ssn)
    by_job: dict[str, set[str]] = {}
    for b in d.binds:
        by_job.setdefault(b.job, set()).add(b.node)
    tasks = _tasks(world)
    for cluster in world.nodes:
        load = sum(tasks[b.task][1]["cpu"] for b in d.binds if b.node == cluster.name)
        assert load <= cluster.idle["cpu"] + EPS
    for j in world.jobs:
        if j.id in by_job:
            assert len(by_job[j.id]) == 1
            assert sum(1 for b in d.binds if b.job == j.id) == len(j.tasks)


def _packs_one_by_one(cluster: NodeInfo, reqs: list[tuple[dict[str, float], int]]) -> bool:
    """The reference: take every copy, largest request first, on a scratch copy of the cluster."""
    scratch = cluster.clone()
    copies = [req for req, count in reqs for _ in range(count)]
    for req in sorted(copies, key=lambda r: -sum(r.values())):
        if not scratch.fits(req):
            return False
        scratch.take(req)
    return True


@SETTINGS
@given(st.data())
def test_packing_a_gang_by_counts_agrees_with_taking_its_tasks_one_by_one(data: st.DataObject) -> None:
    sizes = st.sampled_from([{"cpu": 1.0}, {"cpu": 2.0}, {"cpu": 3.0, "memory": 1.0}, {"memory": 2.0}, {"cpu": 0.5}])
    shapes = [
        NodeShape(
            {"cpu": 8.0, "memory": 4.0},
            {"cpu": float(data.draw(st.integers(0, 8))) / 2, "memory": float(data.draw(st.integers(0, 4)))},
            data.draw(st.integers(0, 4)),
        )
        for _ in range(data.draw(st.integers(1, 4)))
    ]
    cluster = NodeInfo("c", {}, shapes=shapes)
    reqs = [(data.draw(sizes), data.draw(st.integers(1, 12))) for _ in range(data.draw(st.integers(1, 4)))]
    assert cluster.packs(reqs) == _packs_one_by_one(cluster, reqs)
