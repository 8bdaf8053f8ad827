"""Capacity as the federation sees it: per node, or per node shape once a cluster is large."""

from __future__ import annotations

from bisect import bisect_left, insort

from federation.models.agent_report import PlainNodeReport
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


class ShapeSummary:
    """A cluster's capacity by node shape, ``summarise(nodes, per_node_limit=0)``, kept up to date node
    by node. The backend hands out the same view of a node until its usage changes (the simulated
    one does), so only nodes with a new view are keyed again and moved between shapes: summarising
    a cluster where a few nodes changed costs a look at each of the others, not a regrouping."""

    def __init__(self) -> None:
        self._views: list[NodeView] = []
        self._keys: list[ShapeKey] = []
        self._members: dict[ShapeKey, list[int]] = {}  # shape -> positions of its nodes, ascending
        # shape -> (the view of its first node, its count, its entry): an entry is built again only
        # when one of those changed
        self._reports: dict[ShapeKey, tuple[NodeView, int, PlainNodeReport]] = {}

    def __call__(self, nodes: list[NodeView]) -> list[PlainNodeReport]:
        views = self._views
        if len(nodes) != len(views):
            self._reset(nodes)
        else:
            for i, node in enumerate(nodes):
                if node is not views[i]:
                    if node.name != views[i].name:
                        self._reset(nodes)
                        break
                    self._move(i, node)
        # Shapes in the order of their first node, as summarise groups them.
        known, self._reports = self._reports, {}
        out = []
        for key, at in sorted(self._members.items(), key=lambda item: item[1][0]):
            first, count = nodes[at[0]], len(at)
            entry = known.get(key)
            if entry is None or entry[0] is not first or entry[1] != count:
                entry = (first, count, _shape_report(first, count))
            self._reports[key] = entry
            out.append(entry[2])
        return out

    def _reset(self, nodes: list[NodeView]) -> None:
        self._views = list(nodes)
        self._keys = [_shape_key(node) for node in nodes]
        self._members = {}
        for i, key in enumerate(self._keys):
            self._members.setdefault(key, []).append(i)

    def _move(self, i: int, node: NodeView) -> None:
        key = _shape_key(node)
        old = self._keys[i]
        if key != old:
            members = self._members[old]
            del members[bisect_left(members, i)]
            if not members:
                del self._members[old]
            insort(self._members.setdefault(key, []), i)
            self._keys[i] = key
        self._views[i] = node


def summarise(nodes: list[NodeView], per_node_limit: int = PER_NODE_LIMIT) -> list[PlainNodeReport]:
    """Identical nodes (same allocatable, free, labels, cordon) fold into one entry with a count."""
    if len(nodes) <= per_node_limit:
        return [
            PlainNodeReport(
                name=n.name, allocatable=n.allocatable, free=_clamped(n), labels=n.labels, unschedulable=n.unschedulable
            )
            for n in nodes
        ]
    groups: dict[ShapeKey, list[NodeView]] = {}
    for node in nodes:
        groups.setdefault(_shape_key(node), []).append(node)
    return [_shape_report(group[0], len(group)) for group in groups.values()]


def _shape_report(first: NodeView, count: int) -> PlainNodeReport:
    """``count`` nodes like ``first`` as one entry, named after the first."""
    return PlainNodeReport(
        name=f"{first.name}+{count - 1}" if count > 1 else first.name,
        count=count,
        allocatable=first.allocatable,
        free=_clamped(first),
        labels=first.labels,
        unschedulable=first.unschedulable,
    )


def _clamped(node: NodeView) -> dict[str, float]:
    """Free never below zero in a report, even when the backend over-commits briefly."""
    return {resource: max(0.0, amount) for resource, amount in node.free().items()}
