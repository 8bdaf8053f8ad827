"""The queues with work, served least-served first: a flat heap of queue keys, or a heap per level.

Both give the queue with the smallest fresh ``Session.queue_key`` among the queues added and not
dropped. Keys only grow while an action hands out resources, so a stored key is a lower bound: an
entry found stale at the top is keyed again and pushed back, and nothing is re-sorted wholesale.

``FlatQueues`` serves any queue order. ``TreeQueues`` serves the common one where a single plugin
orders queues by the tree of one share (``queue_order`` is ``Session.tree_key`` over its
``queue_share``): each parent keeps a heap of its children. An allocation in a leaf moves the
shares of its ancestors, which in a flat heap makes every leaf under them stale, and each is keyed
again as it reaches the top. Level by level, only the entries on that one path are keyed again:
siblings keep their order under a parent whose share moved.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from policies.snapshot import ROOT

if TYPE_CHECKING:
    from policies.framework.session import Session


class FlatQueues:
    def __init__(self, ssn: Session, queues: Iterable[str]) -> None:
        self._key = ssn.queue_key
        self._heap: list[tuple[Any, int, str]] = []
        self._listed: set[str] = set()
        self._seq = itertools.count()
        for queue in queues:
            self.add(queue)

    def __contains__(self, queue: str) -> bool:
        return queue in self._listed

    def add(self, queue: str) -> None:
        heapq.heappush(self._heap, (self._key(queue), next(self._seq), queue))
        self._listed.add(queue)

    def top(self) -> str | None:
        heap = self._heap
        while heap:
            key, _, queue = heap[0]
            fresh = self._key(queue)
            if fresh > key:
                heapq.heapreplace(heap, (fresh, next(self._seq), queue))
                continue
            return queue
        return None

    def drop(self) -> None:
        """Take out the queue ``top`` returned last."""
        self._listed.discard(heapq.heappop(self._heap)[2])


# A child's key in its parent's heap: (its share, 0, its name) for a leaf; (its share, 1, its best
# leaf's key in its own heap) for an inner queue. Compared as a whole this is the order of the flat
# keys: shares from the top down, a queue that ends where another goes on first (as a shorter tuple
# sorts first), then the queue's name.
TreeKey = tuple[float, int, Any]


class TreeQueues:
    def __init__(self, ssn: Session, share: Callable[[str], float], queues: Iterable[str]) -> None:
        self._ssn = ssn
        self._share = share
        self._heaps: dict[str, list[tuple[TreeKey, int, str]]] = {}  # parent -> its children with work
        self._leaves: set[str] = set()
        self._seq = itertools.count()
        self._last: str | None = None  # the leaf ``top`` returned last
        inner: set[str] = set()
        for queue in queues:
            self._leaves.add(queue)
            self._push(queue, (share(queue), 0, queue))
            inner.update(ssn.ancestry(queue)[1:])
        # Inner queues deepest first, so each is keyed once, over all its children.
        for queue in sorted(inner, key=lambda q: (-len(ssn.ancestry(q)), q)):
            key = self._inner_key(queue)
            assert key is not None  # a leaf with work is under it
            self._push(queue, key)

    def __contains__(self, queue: str) -> bool:
        return queue in self._leaves

    def _parent(self, queue: str) -> str:
        parent = self._ssn.queues[queue].parent
        return ROOT if parent is None else parent

    def _push(self, queue: str, key: TreeKey) -> None:
        heapq.heappush(self._heaps.setdefault(self._parent(queue), []), (key, next(self._seq), queue))

    def add(self, queue: str) -> None:
        """List a leaf again. It may lower its ancestors' keys, so each gets an entry with its key now;
        an older, higher entry of the same queue is keyed again or dropped when it reaches a top."""
        self._leaves.add(queue)
        self._push(queue, (self._share(queue), 0, queue))
        for inner in self._ssn.ancestry(queue)[1:]:
            key = self._inner_key(inner)
            assert key is not None
            self._push(inner, key)

    def _inner_key(self, queue: str) -> TreeKey | None:
        best = self._best(queue)
        return None if best is None else (self._share(queue), 1, best)

    def _best(self, parent: str) -> TreeKey | None:
        """The smallest fresh key among ``parent``'s children, whose entry then heads its heap."""
        heap = self._heaps.get(parent)
        while heap:
            key, _, child = heap[0]
            fresh = (self._share(child), 0, child) if child in self._leaves else self._inner_key(child)
            if fresh is None:
                heapq.heappop(heap)  # an inner queue left with no leaf under it
                continue
            if fresh > key:
                heapq.heapreplace(heap, (fresh, next(self._seq), child))
                continue
            return fresh
        return None

    def top(self) -> str | None:
        key = self._best(ROOT)
        while key is not None and key[1] == 1:
            key = key[2]
        self._last = None if key is None else key[2]
        return self._last

    def drop(self) -> None:
        """Take out the leaf ``top`` returned last: finding it left it at the top of its parent's heap."""
        leaf = self._last
        assert leaf is not None
        heapq.heappop(self._heaps[self._parent(leaf)])
        self._leaves.discard(leaf)
        self._last = None
