"""The agent's nodes as its sessions see them, kept from one local cycle to the next.

The backend hands out the same view of a node until the node's usage changes (the simulated one
does), so only nodes with a new view are built again, and the node sizes and the capacity, which
a session would otherwise sum over every node each cycle, follow those nodes instead.
"""

from __future__ import annotations

from collections import Counter
from itertools import compress
from operator import is_not

from member_agent.backends.base import NodeView
from policies import NodeInfo
from policies import resources as res
from policies.resources import Resources

Size = tuple[tuple[str, float], ...]


def _size(view: NodeView) -> Size | None:
    """The node's allocatable as a key (in its own order, which the totals' key order follows), or
    None for a cordoned node: all that the node sizes and the capacity read of a node."""
    return None if view.unschedulable else tuple(view.allocatable.items())


def node_info(view: NodeView) -> NodeInfo:
    """The node as a session sees it; idle is worked out here as NodeInfo would (allocatable less
    used, in allocatable's order), without a copy and a second pass."""
    allocatable = dict(view.allocatable)
    used = {r: view.used.get(r, 0.0) for r in allocatable}
    idle = {r: q - used[r] for r, q in allocatable.items()}
    return NodeInfo(view.name, allocatable, idle, used, labels=dict(view.labels), unschedulable=view.unschedulable)


class NodeTable:
    """The last cycle's node views, the NodeInfo of each, the nodes' sizes and their capacity."""

    def __init__(self) -> None:
        self._views: list[NodeView] = []
        self._infos: list[NodeInfo] = []
        self._keys: list[Size | None] = []  # each node's size, and how many nodes have each
        self._sizes: Counter[Size | None] = Counter()
        self._capacity: Resources | None = None  # the schedulable nodes' total; None: to be summed again

    def update(self, views: list[NodeView]) -> list[NodeInfo]:
        """The session's nodes. A view handed out again in the same place keeps its NodeInfo: a
        session puts back every node it changes, so a NodeInfo is the same between sessions as when
        it was built. The sizes and the capacity follow the nodes whose view is new."""
        before = self._views
        if len(before) != len(views):
            self._views = list(views)
            self._infos = [node_info(view) for view in views]
            self._keys = [_size(view) for view in views]
            self._sizes = Counter(self._keys)
            self._capacity = None
            return list(self._infos)
        infos, keys, sizes = self._infos, self._keys, self._sizes
        for i in compress(range(len(views)), map(is_not, views, before)):  # identity tests in C
            view = before[i] = views[i]
            infos[i] = node_info(view)
            size = _size(view)
            if size != keys[i]:
                sizes[keys[i]] -= 1
                sizes[size] += 1
                keys[i] = size
                self._capacity = None
        return list(infos)

    def sizes(self) -> list[Resources]:
        """The distinct allocatables of the schedulable nodes: a cluster has a handful, not a thousand."""
        return [dict(size) for size, count in self._sizes.items() if size is not None and count > 0]

    def capacity(self) -> Resources:
        """The schedulable nodes' allocatable in total, summed as a session would (in node order) when
        not known: the same floats."""
        if self._capacity is None:
            self._capacity = res.total(info.allocatable for info in self._infos if not info.unschedulable)
        return self._capacity
