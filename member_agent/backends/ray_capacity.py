"""Each Ray node's capacity and use, from Ray's public APIs only (private modules change between
Ray releases): totals from ``ray.nodes()``, what placement groups reserve and where from
``placement_group_table()``, and ``ray.available_resources()`` for the whole cluster.

Ray's public API says on which node a placement group's bundles sit, but not where work outside any
group runs (only the state API does, and it needs the dashboard). fedq reserves every task that asks
for resources in a group, so that remainder is other users' work: it is counted as used, spread over
the nodes in proportion to what each has left, so the cluster's total free is exact and no node is
shown with more free than it has in all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from member_agent.backends.ray_resources import from_ray

Amounts = dict[str, float]
_EPSILON = 1e-9


def node_usage(
    nodes: Sequence[Mapping[str, Any]], groups: Mapping[str, Mapping[str, Any]], available: Mapping[str, float]
) -> tuple[dict[str, Amounts], dict[str, Amounts]]:
    """(total, used) per alive node id, in fedq's resource names."""
    totals = {node["NodeID"]: from_ray(node.get("Resources", {})) for node in nodes if node.get("Alive")}
    used: dict[str, Amounts] = {node: {} for node in totals}
    for group in groups.values():
        if group.get("state") != "CREATED":
            continue
        placed = group.get("bundles_to_node_id", {})
        for index, bundle in group.get("bundles", {}).items():
            node = placed.get(index)
            if node in used:
                for resource, amount in from_ray(bundle).items():
                    used[node][resource] = used[node].get(resource, 0.0) + amount
    free = from_ray(available)
    for resource in {r for amounts in totals.values() for r in amounts}:
        left = {
            node: max(0.0, amounts.get(resource, 0.0) - used[node].get(resource, 0.0))
            for node, amounts in totals.items()
        }
        outside = sum(left.values()) - free.get(resource, 0.0)
        room = sum(left.values())
        if outside <= _EPSILON or room <= _EPSILON:
            continue
        share = min(1.0, outside / room)
        for node, spare in left.items():
            if spare > 0:
                used[node][resource] = used[node].get(resource, 0.0) + spare * share
    return totals, used
