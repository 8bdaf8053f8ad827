"""Fair share's invariants over random trees, weights and histories (hypothesis).

Slices are read from the production fairshare plugin in the federation's own global session conf;
allocations come from ``fedq simulate`` runs of random histories followed by deep backlogs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.config import FederationConfig
from federation.scheduler.conf import global_conf
from policies import JobInfo, ManualClock, NodeInfo, NodeShape, QueueInfo, Snapshot, open_session
from policies.plugins.fairshare import FairShare
from policies.snapshot import TaskInfo, Usage
from tests.conformance.cases import HOUR, backlog, job, scenario, simulate, started_at

EPS = 1e-6
CONF = global_conf(FederationConfig())


@dataclass
class World:
    capacity: int
    queues: dict[str, QueueInfo]  # every queue of the tree by path
    leaves: list[str]
    demand: dict[str, int]  # one-cpu tasks pending per leaf
    rup: dict[str, float]  # real priority of every queue


@st.composite
def worlds(draw: st.DrawFn, *, limits: bool = True) -> World:
    """A tree of depth 1-3 with 1-3 children per queue, weights 1-4, some guarantees and caps,
    random decayed usage per queue and random demand per leaf."""
    queues: dict[str, QueueInfo] = {}
    leaves: list[str] = []

    def grow(parent: str, depth: int) -> None:
        for i in range(draw(st.integers(1, 3))):
            path = f"{parent}.q{i}" if parent else f"q{i}"
            info = QueueInfo(path, weight=float(draw(st.integers(1, 4))))
            if limits and draw(st.booleans()):
                info.guarantee = {"cpu": float(draw(st.integers(0, 20)))}
                info.accept_surplus = draw(st.booleans())
            if limits and draw(st.booleans()):
                info.cap = {"cpu": float(draw(st.integers(1, 40)))}
            queues[path] = info
            if depth < 3 and draw(st.booleans()):
                grow(path, depth + 1)
            else:
                leaves.append(path)

    grow("", 1)
    demand = {leaf: draw(st.integers(0, 60)) for leaf in leaves}
    rup = {q: draw(st.floats(0.5, 500.0)) for q in queues}
    return World(draw(st.integers(1, 100)), queues, leaves, demand, rup)


def slices(world: World) -> dict[str, float]:
    """The fairshare plugin's slices (cpus here: 1 unit a cpu) for the world's demand."""
    cluster = NodeInfo("c1", {}, shapes=[NodeShape({"cpu": 1.0}, {"cpu": 1.0}, world.capacity)])
    pending = [
        JobInfo(f"{leaf}-j", leaf, "t", tasks=[TaskInfo(f"{leaf}-j", "w", k, {"cpu": 1.0}) for k in range(n)])
        for leaf, n in world.demand.items()
        if n
    ]
    snapshot = Snapshot([cluster], pending, dict(world.queues), Usage(queue_rup=world.rup))
    ssn = open_session(CONF, snapshot, ManualClock(0))
    plugin = next(p for p in ssn.plugins if isinstance(p, FairShare))
    return {q: plugin.slices.get(q, 0.0) for q in world.queues}


def subtree_demand(world: World, queue: str) -> int:
    return sum(n for leaf, n in world.demand.items() if leaf == queue or leaf.startswith(queue + "."))


def children(world: World, parent: str) -> list[str]:
    return [q for q, info in world.queues.items() if info.parent == parent]


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds(limits=False))
def test_without_limits_slices_hand_out_all_the_capacity_demand_can_take(world: World) -> None:
    got = slices(world)
    for parent in ["", *world.queues]:
        kids = children(world, parent)
        if not kids:
            continue
        budget = world.capacity if parent == "" else got[parent]
        want = sum(subtree_demand(world, k) for k in kids)
        assert abs(sum(got[k] for k in kids) - min(budget, want)) < 1e-6 * max(1.0, budget), parent


@SETTINGS
@given(worlds())
def test_no_slice_exceeds_a_cap_a_quota_or_the_demand(world: World) -> None:
    got = slices(world)
    for q, info in world.queues.items():
        assert got[q] <= subtree_demand(world, q) + EPS
        if info.cap is not None:
            assert got[q] <= info.cap["cpu"] + EPS
        if not info.accept_surplus:
            assert got[q] <= info.guarantee.get("cpu", 0.0) + EPS
    assert sum(got[q] for q in children(world, "")) <= world.capacity + EPS


@SETTINGS
@given(worlds(), st.data())
def test_less_decayed_usage_never_means_a_smaller_slice(world: World, data: st.DataObject) -> None:
    """Two sibling leaves alike in everything but usage: the lighter user's slice is not smaller."""
    leaf = data.draw(st.sampled_from(world.leaves))
    info = world.queues[leaf]
    twin = f"{leaf}x"  # a sibling: same parent
    world.queues[twin] = QueueInfo(
        twin, info.weight, dict(info.guarantee), info.cap and dict(info.cap), info.accept_surplus
    )
    world.leaves.append(twin)
    world.demand[twin] = world.demand[leaf]
    world.rup[twin] = data.draw(st.floats(0.5, 500.0))
    got = slices(world)
    light, heavy = sorted((leaf, twin), key=lambda q: world.rup[q])
    assert got[light] >= got[heavy] - EPS


@st.composite
def history_cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[str], int]:
    """Two to four sibling queues of equal weight, each with a random past (cpus for hours) that
    ended by 10h, then a deep backlog of one-cpu jobs from every queue at 10h."""
    n = draw(st.integers(2, 4))
    cpus = draw(st.integers(4, 40))
    names = [f"q{i}" for i in range(n)]
    queues: list[dict[str, Any]] = [{"name": q, "tenants": [f"u{q}"]} for q in names]
    jobs: list[dict[str, Any]] = []
    free = cpus  # the pasts run side by side: together they fit the cluster
    for q in names:
        used, hours = draw(st.integers(0, free)), draw(st.integers(1, 10))
        free -= used
        if used:
            jobs.append(job(f"h{q}", f"u{q}", q, (10 - hours) * HOUR, hours * HOUR, cpus=used))
    for q in names:
        jobs += backlog(f"{q}-", f"u{q}", q, cpus, 10 * HOUR)
    return scenario(cpus, queues, jobs, fairshare={"halfLife": "4h"}), names, cpus


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_allocation_follows_decayed_usage_through_fedq_simulate(tmp_path: Path, data: st.DataObject) -> None:
    """The whole cluster starts at once, and a queue whose decayed usage (RUP) is lower never starts
    fewer jobs than one whose RUP is higher (every past ends at 10h, when the backlogs come)."""
    case, names, cpus = data.draw(history_cases())
    out = tmp_path / str(len(list(tmp_path.iterdir())))
    rows = simulate(case, out)
    got = started_at(rows, 10 * HOUR)
    assert sum(got.values()) == cpus
    rup = {q: 0.5 for q in names}  # HTCondor's floor: a queue that never ran
    for j in case["jobs"]:
        if j["id"].startswith("h"):
            # A run of c cpus over [s, 10h) from RUP 0.5: 0.5*b + c*(1 - b), b = 0.5**((10h - s)/h).
            b = 0.5 ** (j["runtime"] / (4 * HOUR))
            rup[j["queue"]] = 0.5 * b + j["tasks"][0]["replicas"] * (1 - b)
    for a in names:
        for b in names:
            if rup[a] < rup[b] - 1e-9:
                assert got[a] >= got[b], (a, b, rup, dict(got))
