"""Array throttles (``spec.array.parallelism``, Slurm's ``--array=0-19%4``): at most N of an array's
elements on clusters at once.

``FederationState`` keeps a throttled array's queued elements out of the pending index unless this
module grants them a slot: of the queued elements nothing else keeps out, the first by index, as many
as the array has room for (its limit less its elements Dispatched, Admitted or Running). So elements on
clusters plus elements a cycle may consider never exceed the limit, however many one cycle dispatches,
and the scheduler's session needs no rule of its own. A change costs the array's room, not its size.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field

from federation.lifecycle import ON_CLUSTER
from federation.models import JobRecord


@dataclass(slots=True)
class _Array:
    limit: int
    on_cluster: set[str] = field(default_factory=set)
    queued: list[tuple[int, str]] = field(default_factory=list)  # (index, element), sorted
    granted: set[str] = field(default_factory=set)  # queued elements a cycle may consider


class ArrayThrottles:
    def __init__(self) -> None:
        self._arrays: dict[str, _Array] = {}
        self._element: dict[str, tuple[str, int, bool]] = {}  # element -> (array, index, queued)

    def track(self, record: JobRecord) -> str | None:
        """Note where a live element of a throttled array is now; returns its array (None: not one)."""
        array = record.spec.array
        if not record.array_id or array is None or array.parallelism is None:
            return None
        self.forget(record.id)
        group = self._arrays.setdefault(record.array_id, _Array(array.parallelism))
        index = record.array_index if record.array_index is not None else 0
        queued = record.state.queued
        if queued:
            insort(group.queued, (index, record.id))
        elif record.state in ON_CLUSTER:
            group.on_cluster.add(record.id)
        self._element[record.id] = (record.array_id, index, queued)
        return record.array_id

    def forget(self, job_id: str) -> str | None:
        """The element left (or moves): returns its array, whose grants are to be worked out again."""
        known = self._element.pop(job_id, None)
        if known is None:
            return None
        name, index, queued = known
        group = self._arrays[name]
        if queued:
            at = bisect_left(group.queued, (index, job_id))
            del group.queued[at]
            group.granted.discard(job_id)
        group.on_cluster.discard(job_id)
        if not group.queued and not group.on_cluster:
            del self._arrays[name]
        return name

    def array_of(self, job_id: str) -> str | None:
        known = self._element.get(job_id)
        return None if known is None else known[0]

    def held_back(self, job_id: str) -> bool:
        """A queued element of a throttled array without a slot: no cycle may consider it."""
        known = self._element.get(job_id)
        return known is not None and job_id not in self._arrays[known[0]].granted

    def regrant(self, name: str, eligible: Callable[[str], bool]) -> set[str]:
        """Give the array's free slots to its first eligible queued elements; returns the elements
        whose grant changed."""
        group = self._arrays.get(name)
        if group is None:
            return set()
        room = group.limit - len(group.on_cluster)
        granted: set[str] = set()
        for _, element in group.queued:
            if len(granted) >= room:
                break
            if eligible(element):
                granted.add(element)
        changed = granted ^ group.granted
        group.granted = granted
        return changed

    def published(self) -> dict[str, list[object]]:
        """What explain and the listings need: array -> [elements on clusters, limit, granted elements],
        for the arrays some of whose elements the throttle holds back."""
        return {
            name: [len(group.on_cluster), group.limit, sorted(group.granted)]
            for name, group in self._arrays.items()
            if len(group.queued) > len(group.granted)
        }
