"""Ray capacity from public APIs only: a worked example of ``node_usage``, the same figures as Ray's own
public totals on a real local Ray (work outside fedq's groups included), and no private Ray module in
the member agent."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from member_agent.backends.ray_capacity import node_usage

REPO = Path(__file__).resolve().parents[2]


def test_no_private_ray_module_is_imported_by_the_member_agent() -> None:
    found = []
    for path in (REPO / "member_agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.startswith("ray._private")]
    assert found == []


def test_groups_count_on_their_nodes_and_the_rest_is_spread_by_what_is_left() -> None:
    # Two nodes of 4 CPUs. A group holds 3 CPUs on node a (two bundles) and nothing on b; Ray says
    # 3 CPUs are available in all, so 8 - 3 (group) - 3 (free) = 2 CPUs run outside any group. What is
    # left beside the group: a 1, b 4 (5 in all), so a takes 2 * 1/5 = 0.4 and b 2 * 4/5 = 1.6.
    nodes = [
        {"NodeID": "a", "Alive": True, "Resources": {"CPU": 4.0, "node:10.0.0.1": 1.0}},
        {"NodeID": "b", "Alive": True, "Resources": {"CPU": 4.0}},
        {"NodeID": "dead", "Alive": False, "Resources": {"CPU": 4.0}},
    ]
    groups = {
        "g1": {
            "state": "CREATED",
            "bundles": {0: {"CPU": 2.0}, 1: {"CPU": 1.0}},
            "bundles_to_node_id": {0: "a", 1: "a"},
        },
        "g2": {"state": "REMOVED", "bundles": {0: {"CPU": 4.0}}, "bundles_to_node_id": {0: "b"}},
    }
    available = {"CPU": 3.0, "CPU_group_g1": 3.0, "node:10.0.0.1": 1.0}
    totals, used = node_usage(nodes, groups, available)
    assert totals == {"a": {"cpu": 4.0}, "b": {"cpu": 4.0}}
    assert used["a"]["cpu"] == pytest.approx(3.4) and used["b"]["cpu"] == pytest.approx(1.6)
    free = sum(totals[n]["cpu"] - used[n]["cpu"] for n in totals)
    assert free == pytest.approx(available["CPU"])


def test_no_work_outside_groups_leaves_the_other_nodes_free() -> None:
    nodes = [{"NodeID": n, "Alive": True, "Resources": {"CPU": 2.0, "GPU": 1.0}} for n in "ab"]
    groups = {"g": {"state": "CREATED", "bundles": {0: {"CPU": 2.0, "GPU": 1.0}}, "bundles_to_node_id": {0: "b"}}}
    totals, used = node_usage(nodes, groups, {"CPU": 2.0, "GPU": 1.0})
    assert used == {"a": {}, "b": {"cpu": 2.0, "nvidia.com/gpu": 1.0}}
    assert totals["a"] == {"cpu": 2.0, "nvidia.com/gpu": 1.0}


@pytest.mark.ray
def test_free_capacity_is_what_ray_says_is_available_also_beside_foreign_work(ray_cluster: str) -> None:
    import ray

    from member_agent.backends.ray_backend import RayBackend

    backend = RayBackend()

    @ray.remote(num_cpus=1)
    class Foreign:  # another Ray user's actor, in no placement group
        def ping(self) -> bool:
            return True

    foreign = Foreign.remote()  # type: ignore[attr-defined]
    try:
        assert ray.get(foreign.ping.remote(), timeout=60)
        [node] = backend.nodes()
        totals = ray.cluster_resources()
        assert node.allocatable["cpu"] == totals["CPU"] and node.allocatable["memory"] == totals["memory"]
        free_cpu = node.allocatable["cpu"] - node.used["cpu"]
        assert free_cpu == pytest.approx(ray.available_resources().get("CPU", 0.0))
        assert node.used["cpu"] == pytest.approx(1.0)
    finally:
        ray.kill(foreign)
        backend.close()
