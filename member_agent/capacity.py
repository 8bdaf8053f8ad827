"""Capacity as the federation sees it: per node, or per node shape once a cluster is large."""

from __future__ import annotations

from collections.abc import Callable

from federation.models.cluster import NodeReport
from member_agent.backends.base import NodeView

PER_NODE_LIMIT = 200

ShapeKey = tuple[object, ...]


def _shape_key(node: NodeView) -> ShapeKey:
    free = node.free()
    return (
        tuple(sorted(node.allocatable.items())),
        tuple(sorted((r, round(q, 6)) for r, q in free.items())),
        tuple(sorted(node.labels.items())),
        node.unschedulable,
    )


class ShapeKeys:
    """Each node's shape key, remembered while the backend hands out the same view of the node
    (the simulated backend shares a view until the node's usage changes), so summarising a
    cluster where few nodes changed costs a lookup for each of the others."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[NodeView, ShapeKey]] = {}

    def __call__(self, node: NodeView) -> ShapeKey:
        seen = self._known.get(node.name)
        if seen is not None and seen[0] is node:
            return seen[1]
        key = _shape_key(node)
        self._known[node.name] = (node, key)
        return key


def summarise(
    nodes: list[NodeView], per_node_limit: int = PER_NODE_LIMIT, shape_key: Callable[[NodeView], ShapeKey] = _shape_key
) -> list[NodeReport]:
    """Identical nodes (same allocatable, free, labels, cordon) fold into one entry with a count."""
    if len(nodes) <= per_node_limit:
        return [
            NodeReport(
                name=n.name, allocatable=n.allocatable, free=_clamped(n), labels=n.labels, unschedulable=n.unschedulable
            )
            for n in nodes
        ]
    groups: dict[ShapeKey, list[NodeView]] = {}
    for node in nodes:
        groups.setdefault(shape_key(node), []).append(node)
    return [
        NodeReport(
            name=f"{group[0].name}+{len(group) - 1}" if len(group) > 1 else group[0].name,
            count=len(group),
            allocatable=group[0].allocatable,
            free=_clamped(group[0]),
            labels=group[0].labels,
            unschedulable=group[0].unschedulable,
        )
        for group in groups.values()
    ]


def _clamped(node: NodeView) -> dict[str, float]:
    """Free never below zero in a report, even when the backend over-commits briefly."""
    return {resource: max(0.0, amount) for resource, amount in node.free().items()}
