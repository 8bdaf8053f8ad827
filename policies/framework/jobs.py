"""Pending jobs in scheduling order: queue, then tenant within the queue, then job.

Each level is a heap whose keys the plugins compute (queue_order, tenant_order, job_order; queues
are served by ``queue_heaps``, level by level where the order allows). Keys grow as a queue or
tenant is given resources, so a stale key is a lower bound: a popped entry is re-keyed and pushed
back if it no longer leads, and nothing is re-sorted wholesale. Lanes (one per
queue and tenant) read from the session's job list or lazily from a PendingIndex, so with 100,000
pending jobs only the heads that are actually considered are touched.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from policies.framework.decisions import CAP, OVERUSED, split_reason
from policies.framework.queue_heaps import FlatQueues, TreeQueues
from policies.snapshot import JobInfo

if TYPE_CHECKING:
    from policies.framework.session import Session


class _Lane:
    """One tenant's jobs in one queue: a heap of pushed-back jobs merged with an ordered stream."""

    __slots__ = ("queue", "tenant", "heap", "stream", "head")

    def __init__(self, queue: str, tenant: str, stream: Iterator[JobInfo]) -> None:
        self.queue = queue
        self.tenant = tenant
        self.heap: list[tuple[Any, ...]] = []
        self.stream = stream
        self.head: tuple[Any, ...] | None = None

    def peek(self, ssn: Session, seq: Iterator[int]) -> tuple[Any, ...] | None:
        if self.head is None:
            job = next(self.stream, None)
            if job is not None:
                self.head = (ssn.job_key(job), next(seq), job)
        best = self.head
        if self.heap and (best is None or self.heap[0] < best):
            best = self.heap[0]
        return best

    def pop(self, ssn: Session, seq: Iterator[int]) -> JobInfo | None:
        best = self.peek(ssn, seq)
        if best is None:
            return None
        if best is self.head:
            self.head = None
        else:
            heapq.heappop(self.heap)
        job: JobInfo = best[2]
        return job


class OrderedJobs:
    def __init__(self, ssn: Session, only: set[str] | None = None) -> None:
        self.ssn = ssn
        self.only = only
        self._seq = itertools.count()
        self._lanes: dict[tuple[str, str], _Lane] = {}
        self._tenants: dict[str, list[tuple[Any, ...]]] = {}
        # The lane whose job was popped last: pushed back on the next call, once that job's placement
        # has moved its tenant's key, rather than now with a key the placement is about to make stale.
        self._popped: _Lane | None = None
        for (queue, tenant), stream in self._streams().items():
            self._lanes[(queue, tenant)] = _Lane(queue, tenant, stream)
        for lane in self._lanes.values():
            self._push_lane(lane)
        share = ssn.tree_share
        self._queues = FlatQueues(ssn, self._tenants) if share is None else TreeQueues(ssn, share, self._tenants)

    def _streams(self) -> dict[tuple[str, str], Iterator[JobInfo]]:
        ssn = self.ssn
        if ssn.index is not None and self.only is None:
            index = ssn.index
            return {key: index.iter_lane(key) for key in index.lanes()}
        groups: dict[tuple[str, str], list[JobInfo]] = {}
        jobs = ssn.pending_jobs if self.only is None else [ssn.jobs[j] for j in self.only if j in ssn.jobs]
        for job in jobs:
            groups.setdefault((job.queue, job.tenant), []).append(job)
        return {key: iter(sorted(group, key=ssn.job_key)) for key, group in groups.items()}

    def _push_lane(self, lane: _Lane) -> None:
        head = lane.peek(self.ssn, self._seq)
        if head is None:
            return
        key = (self.ssn.tenant_key(lane.queue, lane.tenant), head[0])
        heapq.heappush(self._tenants.setdefault(lane.queue, []), (key, next(self._seq), lane))

    def push_back(self, job: JobInfo) -> None:
        """A job that still has pending tasks goes back, re-keyed (its share changed)."""
        self._return_popped()
        lane = self._lanes[(job.queue, job.tenant)]
        was_empty = lane.peek(self.ssn, self._seq) is None
        heapq.heappush(lane.heap, (self.ssn.job_key(job), next(self._seq), job))
        if was_empty:
            self._push_lane(lane)
            if len(self._tenants[job.queue]) == 1 and job.queue not in self._queues:
                self._queues.add(job.queue)

    def pass_over(self, queue: str, tenant: str) -> None:
        """Take no more of the tenant's jobs in ``queue`` from its ordered stream: jobs pushed back after
        a placement (they hold tasks placed in this session) still come."""
        lane = self._lanes[(queue, tenant)]
        lane.stream = iter(())
        lane.head = None

    def pop(self) -> JobInfo | None:
        """The next job to consider, or None when every queue is drained or overused."""
        self._return_popped()
        ssn = self.ssn
        queues = self._queues
        while (queue := queues.top()) is not None:
            tenants = self._tenants.get(queue)
            if not tenants:
                queues.drop()
                continue
            over = ssn.overused(queue)
            if over is not None:
                queues.drop()
                code, message = split_reason(str(over[1]))
                ssn.why_queue(queue, code if code in (OVERUSED, CAP) else OVERUSED, over[0], message)
                continue
            job = self._pop_tenant(tenants)
            if job is None:
                continue
            if job.id not in ssn.jobs:
                ssn.jobs[job.id] = job
            ssn.decisions.considered.setdefault(job.id, job.queue)
            return job
        return None

    def _pop_tenant(self, tenants: list[tuple[Any, ...]]) -> JobInfo | None:
        """The queue's next job, re-keying stale tenants in place (the queue's own key cannot change
        meanwhile: nothing is allocated), or None once the queue has no tenant with work left."""
        ssn = self.ssn
        while tenants:
            key, _, lane = tenants[0]
            head = lane.peek(ssn, self._seq)
            if head is None:
                heapq.heappop(tenants)
                continue
            fresh = (ssn.tenant_key(lane.queue, lane.tenant), head[0])
            if fresh > key:
                heapq.heapreplace(tenants, (fresh, next(self._seq), lane))
                continue
            heapq.heappop(tenants)
            job: JobInfo | None = lane.pop(ssn, self._seq)
            self._popped = lane
            return job
        return None

    def _return_popped(self) -> None:
        lane, self._popped = self._popped, None
        if lane is not None:
            self._push_lane(lane)
