"""The session's queue tree, and what each queue (at every level) and tenant holds and wants.

Plugins read these tables live: shares, caps and deserved slices are all worked out from them.
Mixed into ``Session``: the tables and ``ancestry`` are read on every ordering key and every
allocation, so they stay one attribute of the session away.
"""

from __future__ import annotations

from collections.abc import Callable

from policies import resources as res
from policies.framework.hooks import Fn
from policies.framework.totals import job_totals
from policies.ordering import PendingIndex
from policies.resources import Resources
from policies.snapshot import ROOT, JobInfo, QueueInfo, Snapshot, TaskInfo


class QueueTotals:
    # Set by ``Session`` before ``_open_totals``.
    jobs: dict[str, JobInfo]
    index: PendingIndex | None
    _hook: dict[str, Fn]

    def _open_totals(self, snapshot: Snapshot) -> None:
        """Build the tree (ancestors of every queue with a job are implied) and sum its totals."""
        self.queues = dict(snapshot.queues)
        self.children: dict[str, list[str]] = {}
        self.allocated: dict[str, Resources] = {}  # queue path (all levels) -> held resources, live
        self.allocated_version: dict[str, int] = {}  # queue path -> count of changes to its allocated, for caches
        self.requested: dict[str, Resources] = {}  # queue path (all levels) -> allocated + pending
        self.tenant_allocated: dict[tuple[str, str], Resources] = {}
        self.tenant_version: dict[tuple[str, str], int] = {}  # (queue, tenant) -> changes to its allocated
        self.tenant_requested: dict[tuple[str, str], Resources] = {}
        self._ancestry: dict[str, tuple[str, ...]] = {}
        self._upward: dict[str, tuple[str, ...]] = {}
        held_by_lane = snapshot.held
        leaves = {q for q, _ in held_by_lane} if held_by_lane is not None else {j.queue for j in self.jobs.values()}
        if self.index is not None:
            leaves |= {q for q, _ in self.index.lanes()}
        seen: set[str] = set()
        for start in [*self.queues, *sorted(leaves)]:
            path: str | None = start
            while path is not None and path not in seen:
                seen.add(path)
                info = self.queues.setdefault(path, QueueInfo(path))
                self.children.setdefault(path, [])
                self.allocated.setdefault(path, {})
                self.requested.setdefault(path, {})
                if info.parent is not None:
                    self.children.setdefault(info.parent, []).append(path)
                path = info.parent
        leaf_held, leaf_want = self._lane_totals(snapshot)
        if self.index is not None:
            for lane in self.index.lanes():
                want = self.index.lane_request(lane)
                res.iadd(leaf_want.setdefault(lane[0], {}), want)
                res.iadd(self.tenant_requested.setdefault(lane, {}), want)
        for queue, held in leaf_held.items():
            self._add_up(self.allocated, queue, held)
        for queue, want in leaf_want.items():
            self._add_up(self.requested, queue, want)

    def _lane_totals(self, snapshot: Snapshot) -> tuple[dict[str, Resources], dict[str, Resources]]:
        """Held and wanted resources of the snapshot's jobs per leaf, filling the per-tenant tables.

        From the caller's totals when it keeps them (running jobs only), else summed job by job (or
        taken from the caller's sums of the jobs it hands again)."""
        leaf_held: dict[str, Resources] = {}
        leaf_want: dict[str, Resources] = {}
        if snapshot.held is not None:  # the tenant tables are empty yet, and each lane is seen once
            for lane, holds in snapshot.held.items():
                res.iadd(leaf_held.setdefault(lane[0], {}), holds)
                self.tenant_allocated[lane] = dict(holds)
                self.tenant_requested[lane] = dict(holds)
            return leaf_held, {queue: dict(held) for queue, held in leaf_held.items()}
        kept = snapshot.totals
        if kept is not None:
            kept.begin()
        for job in self.jobs.values():
            held, want = job_totals(job) if kept is None else kept.of(job)
            lane = (job.queue, job.tenant)
            res.iadd(leaf_held.setdefault(job.queue, {}), held)
            res.iadd(leaf_want.setdefault(job.queue, {}), want)
            res.iadd(self.tenant_allocated.setdefault(lane, {}), held)
            res.iadd(self.tenant_requested.setdefault(lane, {}), want)
        return leaf_held, leaf_want

    def ancestry(self, queue: str) -> tuple[str, ...]:
        """The queue and its ancestors up to (not including) the root, leaf first.

        Asked for every allocation and every ordering key, so each queue's is worked out once."""
        known = self._ancestry.get(queue)
        if known is None:
            out = []
            path: str | None = queue
            while path is not None and path != ROOT:
                out.append(path)
                path = self.queues[path].parent
            known = self._ancestry[queue] = tuple(out)
        return known

    def _to_root(self, queue: str) -> tuple[str, ...]:
        """The queue's ancestry and the root: every total an allocation in it moves (kept per queue)."""
        known = self._upward.get(queue)
        if known is None:
            known = self._upward[queue] = (*self.ancestry(queue), ROOT)
        return known

    def _add_up(self, table: dict[str, Resources], queue: str, amount: Resources) -> None:
        for path in self._to_root(queue):
            res.iadd(table.setdefault(path, {}), amount)

    def tree_key(self, queue: str, share: Callable[[str], float]) -> tuple[float, ...]:
        """Shares from the top level down to ``queue``: comparing these tuples walks the tree,
        picking the least-served child at each level (hierarchical DRF / fair share)."""
        return tuple([share(q) for q in reversed(self.ancestry(queue))])

    def _held(self, task: TaskInfo, job: JobInfo, sign: float) -> None:
        """``task`` now holds its resources (``sign`` 1) or gives them back (-1): its queue path and
        tenant move, and the plugins hear of it (``on_allocate`` / ``on_deallocate``)."""
        allocated, versions = self.allocated, self.allocated_version
        for path in self._to_root(job.queue):
            res.iadd(allocated.setdefault(path, {}), task.resources, sign)
            versions[path] = versions.get(path, 0) + 1
        lane = (job.queue, job.tenant)
        res.iadd(self.tenant_allocated.setdefault(lane, {}), task.resources, sign)
        self.tenant_version[lane] = self.tenant_version.get(lane, 0) + 1
        self._hook["on_allocate" if sign > 0 else "on_deallocate"](task, job)
