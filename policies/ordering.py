"""PendingIndex: pending jobs kept in order across cycles, changed in O(log n) per job.

One heap per (leaf queue, tenant) keyed by (-priority, submit time, arrival); removal is lazy.
A session reads lanes through ``iter_lane``, which walks a heap in order without popping it, so a
cycle touches only the heads it considers and leaves the index as it found it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from policies import resources as res
from policies.resources import Resources
from policies.snapshot import JobInfo

LaneKey = tuple[str, str]  # (leaf queue, tenant)


# A heap item: [-priority, submit time, arrival, job], the job set to None once it leaves (removal is
# lazy). Lists compare element by element in C and the arrival number is unique, so the heap never
# compares two jobs and never calls back into Python (an item class with ``__lt__`` did, ~8 times a push).
_Item = list[Any]
_JOB = 3


class _Lane:
    __slots__ = ("heap", "dead")

    def __init__(self) -> None:
        self.heap: list[_Item] = []
        self.dead = 0


class PendingIndex:
    def __init__(self) -> None:
        self._lanes: dict[LaneKey, _Lane] = {}
        self._entries: dict[str, _Item] = {}
        self._request: dict[str, Resources] = {}
        self._lane_request: dict[LaneKey, Resources] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._entries

    def get(self, job_id: str) -> JobInfo | None:
        item = self._entries.get(job_id)
        return None if item is None else item[_JOB]

    def add(self, job: JobInfo) -> None:
        """Insert (or replace) a pending job."""
        if job.id in self._entries:
            self.remove(job.id)
        self._seq += 1
        item = [-float(job.priority), job.submit_time, self._seq, job]
        self._entries[job.id] = item
        heapq.heappush(self._lanes.setdefault((job.queue, job.tenant), _Lane()).heap, item)
        need = job.request()
        res.iadd(self._request.setdefault(job.queue, {}), need)
        res.iadd(self._lane_request.setdefault((job.queue, job.tenant), {}), need)

    def update(self, job: JobInfo) -> None:
        """Re-key a job whose priority, queue or tasks changed."""
        self.add(job)

    def remove(self, job_id: str) -> JobInfo | None:
        item = self._entries.pop(job_id, None)
        if item is None:
            return None
        job: JobInfo = item[_JOB]
        item[_JOB] = None
        key = (job.queue, job.tenant)
        need = job.request()
        res.iadd(self._request[job.queue], need, -1.0)
        res.iadd(self._lane_request[key], need, -1.0)
        lane = self._lanes[key]
        lane.dead += 1
        while lane.heap and lane.heap[0][_JOB] is None:
            heapq.heappop(lane.heap)
            lane.dead -= 1
        if lane.dead > 64 and lane.dead * 2 > len(lane.heap):
            lane.heap = [item for item in lane.heap if item[_JOB] is not None]
            heapq.heapify(lane.heap)
            lane.dead = 0
        if not lane.heap:
            del self._lanes[key]
            del self._lane_request[key]
        return job

    def lanes(self) -> list[LaneKey]:
        return list(self._lanes)

    def jobs(self) -> Iterator[JobInfo]:
        """Every pending job, in no particular order."""
        return (item[_JOB] for item in self._entries.values())

    def queue_request(self, queue: str) -> Resources:
        """Pending resources of a leaf queue, kept as a running sum."""
        return dict(self._request.get(queue, {}))

    def lane_request(self, key: LaneKey) -> Resources:
        """Pending resources of one tenant in one leaf queue."""
        return dict(self._lane_request.get(key, {}))

    def iter_lane(self, key: LaneKey) -> Iterator[JobInfo]:
        """Jobs of one lane in order, without modifying the heap: O(k log k) for the first k."""
        lane = self._lanes.get(key)
        if lane is None:
            return
        heap = lane.heap
        frontier: list[tuple[_Item, int]] = [(heap[0], 0)] if heap else []  # ordered as the heap is
        while frontier:
            item, i = heapq.heappop(frontier)
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap):
                    heapq.heappush(frontier, (heap[child], child))
            if item[_JOB] is not None:
                yield item[_JOB]
