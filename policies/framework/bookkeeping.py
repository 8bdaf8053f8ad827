"""What a session changes of its nodes and tasks: the primitives ``Statement`` allocates, pipelines and
evicts through, and how they are put back at close.

A node is copied only when the session first changes it (most cycles touch a few nodes of
hundreds), and each task's state before its first change is kept, so ``close`` restores exactly
what it touched. Each change bumps its node's version and is logged, which is all the placer
needs to re-judge only changed nodes. Per-job counts of task states follow every change, as
gang checks ask them for every task placed. Mixed into ``Session``, so these stay one method
call on the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policies import resources as res
from policies.framework.decisions import Bind, Decisions, Eviction
from policies.framework.hook_calls import HookCalls
from policies.framework.queue_totals import QueueTotals
from policies.snapshot import READY, JobInfo, NodeInfo, Snapshot, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from policies.profile import ReservationBook


class Bookkeeping(QueueTotals, HookCalls):
    # Set by ``Session``.
    now: float
    whole_job: bool
    book: ReservationBook | None
    decisions: Decisions

    def _open_book(self, snapshot: Snapshot) -> None:
        self.nodes: list[NodeInfo] = list(snapshot.nodes)
        self._saved: dict[int, NodeInfo] = {}  # node index -> its state before this session changed it
        self._spread_nodes: dict[tuple[str, str], dict[int, int]] = {}  # (spread job, cluster) -> its nodes by shape
        self.node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self.node_version = [0] * len(self.nodes)
        self.changes: list[int] = []
        self._journal: dict[int, tuple[TaskInfo, TaskStatus, str]] = {}
        self._ready: dict[str, int] = {}
        self._waiting: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        # The counter each task status is counted in (a status in none, such as releasing, counts nowhere).
        self._counted_in = {status: self._ready for status in READY} | {
            TaskStatus.PIPELINED: self._waiting,
            TaskStatus.PENDING: self._pending,
        }

    def _put_back(self) -> None:
        """Every task and node this session changed, back as the caller handed it."""
        for task, status, node in self._journal.values():
            task.status = status
            task.node = node
        self._journal.clear()
        for i, saved in self._saved.items():
            self.nodes[i].restore(saved)
        self._saved.clear()

    # ---- job state counters --------------------------------------------------------------------

    def _count(self, job: JobInfo) -> None:
        if job.id not in self._ready:
            # Listed by a comprehension (twice as fast as map(attrgetter) on slotted tasks), counted in C:
            # gangs have 100s of tasks.
            statuses = [t.status for t in job.tasks]
            pending = self._pending[job.id] = statuses.count(TaskStatus.PENDING)
            if pending == len(statuses):  # nothing of it placed yet, the common case
                self._ready[job.id] = self._waiting[job.id] = 0
            else:
                self._ready[job.id] = sum(map(statuses.count, READY))
                self._waiting[job.id] = statuses.count(TaskStatus.PIPELINED)

    def ready_count(self, job: JobInfo) -> int:
        self._count(job)
        return self._ready[job.id]

    def pipelined_count(self, job: JobInfo) -> int:
        self._count(job)
        return self._waiting[job.id]

    def pending_count(self, job: JobInfo) -> int:
        self._count(job)
        return self._pending[job.id]

    def pending_tasks(self, job: JobInfo) -> list[TaskInfo]:
        if self.pending_count(job) == len(job.tasks):
            tasks = list(job.tasks)  # a job not started yet, the common case: no task to test
        else:
            tasks = [t for t in job.tasks if t.status == TaskStatus.PENDING]
        if len(tasks) > 1 and self.hooks.has("task_order"):
            tasks.sort(key=self.task_key)
        return tasks

    def to_place(self, job: JobInfo) -> bool:
        """Whether the job has tasks for this session to place: pending ones, and with whole-job
        placement none once its gang is placed (its member places an elastic job's other tasks)."""
        if self.whole_job and (self.ready_count(job) or self.pipelined_count(job)):
            return False
        return self.pending_count(job) > 0

    def gang_to_place(self, job: JobInfo) -> list[TaskInfo]:
        """The pending tasks whole-job placement puts on one node (cluster): all of a rigid job's, an
        elastic job's gang only (Volcano starts a job with its minAvailable; the rest wait for room)."""
        tasks = self.pending_tasks(job)
        if job.gang_size >= len(tasks):
            return tasks
        gang = {id(t) for t in job.min_gang()}
        return [t for t in tasks if id(t) in gang]

    def _set_status(self, task: TaskInfo, job: JobInfo, status: TaskStatus, node: str) -> None:
        self._count(job)
        key = id(task)
        if key not in self._journal:
            self._journal[key] = (task, task.status, task.node)
        counted_in = self._counted_in
        before, after = counted_in.get(task.status), counted_in.get(status)
        if before is not None:
            before[job.id] -= 1
        if after is not None:
            after[job.id] += 1
        task.status = status
        task.node = node

    # ---- primitives used by Statement ----------------------------------------------------------

    def placed_here(self) -> list[TaskInfo]:
        """Tasks this session has allocated or pipelined so far."""
        wanted = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED)
        return [t for t, before, _ in self._journal.values() if t.status in wanted and before == TaskStatus.PENDING]

    def node(self, name: str) -> NodeInfo:
        return self.nodes[self.node_index[name]]

    def _touch(self, node: NodeInfo) -> None:
        """``node`` is about to change: keep its state for ``close`` (first change only), log the change."""
        i = self.node_index[node.name]
        if i not in self._saved:
            self._saved[i] = node.clone()
        self.node_version[i] += 1
        self.changes.append(i)

    def _apart(self, job: JobInfo, node: NodeInfo) -> dict[int, int] | None:
        """A spread job's nodes per shape on a cluster (``NodeInfo.take``); None for anything else."""
        if not job.spread or node.shapes is None:
            return None
        return self._spread_nodes.setdefault((job.id, node.name), {})

    def allocate_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> object:
        self._touch(node)
        token = node.take(task.resources, self._apart(job, node))
        self._set_status(task, job, TaskStatus.ALLOCATED, node.name)
        if self.book is not None:
            self.book.consume(node.name, task.resources, self.now, self.now + (job.walltime or float("inf")))
        self._held(task, job, 1.0)
        return token

    def unallocate_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo, token: object) -> None:
        self._touch(node)
        node.give(task.resources, token)  # type: ignore[arg-type]
        apart = self._apart(job, node)
        if apart is not None and token is not None:
            apart[token[1]] -= 1  # type: ignore[index]
        self._set_status(task, job, TaskStatus.PENDING, "")
        if self.book is not None:
            self.book.consume(
                node.name, res.scale(task.resources, -1.0), self.now, self.now + (job.walltime or float("inf"))
            )
        self._held(task, job, -1.0)

    def pipeline_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> None:
        self._touch(node)
        res.iadd(node.pipelined, task.resources)
        self._set_status(task, job, TaskStatus.PIPELINED, node.name)
        self._held(task, job, 1.0)

    def unpipeline_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> None:
        self._touch(node)
        res.isub(node.pipelined, task.resources)
        self._set_status(task, job, TaskStatus.PENDING, "")
        self._held(task, job, -1.0)

    def evict_task(self, task: TaskInfo, job: JobInfo) -> TaskStatus:
        node = self.node(task.node)
        before = task.status
        self._touch(node)
        res.iadd(node.releasing, task.resources)
        self._set_status(task, job, TaskStatus.RELEASING, task.node)
        self._held(task, job, -1.0)
        return before

    def unevict_task(self, task: TaskInfo, job: JobInfo, before: TaskStatus) -> None:
        node = self.node(task.node)
        self._touch(node)
        res.isub(node.releasing, task.resources)
        self._set_status(task, job, before, task.node)
        self._held(task, job, 1.0)

    def record_bind(self, task: TaskInfo, job: JobInfo, pipelined: bool) -> None:
        bind = Bind(job.id, task.uid, task.node)
        (self.decisions.pipelined if pipelined else self.decisions.binds).append(bind)
        self.decisions.reasons.pop(job.id, None)

    def record_eviction(self, task: TaskInfo, job: JobInfo, reason: str, action: str = "") -> None:
        self.decisions.evictions.append(Eviction(job.id, task.uid, task.node, reason, action))
