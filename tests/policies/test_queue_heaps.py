"""Queues served level by level (TreeQueues) against the flat heap and a brute-force minimum.

Both must give the queue with the smallest flat key, ``((shares from the top down,), name)``,
whatever the tree's shape (leaves at different depths), ties between shares (0 and inf included)
and the order of grows, drops and adds; and a session must make the same decisions either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from policy_builders import conf, job, node, run

from policies import ManualClock, QueueInfo, Snapshot, open_session
from policies.framework.queue_heaps import FlatQueues, TreeQueues
from policies.snapshot import ROOT

INF = float("inf")


@dataclass
class _Queue:
    parent: str | None


class _Tree:
    """What the heaps read from a session: the queue tree, and a flat key built as one plugin's is."""

    def __init__(self, parents: dict[str, str]) -> None:
        self.queues = {q: _Queue(p) for q, p in parents.items()}
        self.shares: dict[str, float] = {}

    def ancestry(self, queue: str) -> tuple[str, ...]:
        out = []
        path: str | None = queue
        while path is not None and path != ROOT:
            out.append(path)
            path = self.queues[path].parent
        return tuple(out)

    def share(self, queue: str) -> float:
        return self.shares[queue]

    def queue_key(self, queue: str) -> tuple[Any, ...]:
        return ((tuple(self.shares[q] for q in reversed(self.ancestry(queue))),), queue)


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, str], list[str]]:
    """Queue paths under the root, up to three levels, fan-out 1-3; returns (parents, leaves)."""
    parents: dict[str, str] = {}
    leaves: list[str] = []

    def grow(parent: str, depth: int) -> None:
        for i in range(draw(st.integers(1, 3))):
            name = f"{parent}.q{i}" if parent else f"q{i}"
            parents[name] = parent
            if depth < 3 and draw(st.booleans()):
                grow(name, depth + 1)
            else:
                leaves.append(name)

    grow(ROOT, 1)
    return parents, leaves


SHARES = st.sampled_from([0.0, 0.5, 1.0, 2.0, INF])
STEPS = st.lists(
    st.tuples(st.sampled_from(["grow", "drop", "add"]), st.integers(0, 20), st.integers(0, 3), SHARES), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(trees(), st.data(), STEPS)
def test_tree_and_flat_heaps_serve_the_queue_with_the_smallest_flat_key(
    tree: tuple[dict[str, str], list[str]], data: st.DataObject, steps: list[tuple[str, int, int, float]]
) -> None:
    parents, leaves = tree
    ssn = _Tree(parents)
    for q in parents:
        ssn.shares[q] = data.draw(SHARES)
    listed = set(data.draw(st.sets(st.sampled_from(leaves))))
    flat = FlatQueues(ssn, sorted(listed))  # type: ignore[arg-type]
    levels = TreeQueues(ssn, ssn.share, sorted(listed))  # type: ignore[arg-type]

    def served() -> str | None:
        expected = min(listed, key=ssn.queue_key, default=None)
        assert flat.top() == expected
        assert levels.top() == expected
        return expected

    for op, n, up, amount in steps:
        leaf = leaves[n % len(leaves)]
        if op == "grow":  # an allocation in ``leaf``: the shares on its path only grow
            for q in ssn.ancestry(leaf)[: up + 1]:
                ssn.shares[q] += amount
        elif op == "drop":
            top = served()
            if top is not None:
                listed.discard(top)
                flat.drop()
                levels.drop()
        elif leaf not in listed:  # back with work: its key may be below its ancestors' entries
            ssn.shares[leaf] = amount
            listed.add(leaf)
            flat.add(leaf)
            levels.add(leaf)
        assert (leaf in flat) == (leaf in levels) == (leaf in listed)
        served()


def _world() -> Snapshot:
    """Two top queues of two leaves, tenants with past usage in some, more work than room."""
    nodes = [node(f"n{i}", cpu=4) for i in range(3)]
    queues = {
        "a": QueueInfo("a", weight=1),
        "a.x": QueueInfo("a.x", weight=1),
        "a.y": QueueInfo("a.y", weight=2),
        "b": QueueInfo("b", weight=2),
        "b.x": QueueInfo("b.x", weight=1),
        "b.y": QueueInfo("b.y", weight=1),
    }
    jobs = [
        job(f"j{i}", cpu=1 + i % 2, queue=["a.x", "a.y", "b.x", "b.y"][i % 4], tenant=f"t{i % 3}", submit=float(i))
        for i in range(24)
    ]
    return Snapshot(nodes, jobs, queues)


def test_a_session_decides_the_same_served_level_by_level_as_from_the_flat_heap() -> None:
    def tiers(fairshare: dict[str, Any]) -> tuple[list[Any], ...]:
        proportion = {"name": "proportion", "enableQueueOrder": False}  # fair share alone orders queues
        return (["priority", "gang"], [fairshare, "predicates", proportion])

    by_levels = conf("allocate, backfill", *tiers({"name": "fairshare"}))
    flat = conf("allocate, backfill", *tiers({"name": "fairshare", "enableQueueShare": False}))
    assert open_session(by_levels, _world(), ManualClock(0)).tree_share is not None
    assert open_session(flat, _world(), ManualClock(0)).tree_share is None
    a, b = run(by_levels, _world()), run(flat, _world())
    assert [(x.job, x.task, x.node) for x in a.binds] == [(x.job, x.task, x.node) for x in b.binds]
    assert list(a.considered) == list(b.considered)
    assert 0 < len(a.binds) < 24  # not every job fits: which ones got the cores is the order's doing
    assert {x.job for x in a.binds} & {"j2", "j3"} and {x.job for x in a.binds} & {"j0", "j1"}  # both tops served
