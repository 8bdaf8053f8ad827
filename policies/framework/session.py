"""Session: one scheduling cycle over a snapshot, at either level.

The session changes the snapshot's nodes (or clusters) and task states in place while it runs;
``close_session`` puts every node and task it touched back, so the caller's snapshot objects (which
the global level keeps across cycles in a PendingIndex, and the local level keeps while a node is
unchanged) come out unchanged. A node is copied only when the session first changes it: most
cycles touch a few nodes of hundreds. Decisions are the only output.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from time import perf_counter
from typing import TYPE_CHECKING, Any, ClassVar

from policies import resources as res
from policies.clock import Clock
from policies.framework.conf import Arguments, SchedulerConf
from policies.framework.decisions import Bind, Decisions, Eviction, Reason
from policies.framework.hooks import Fn
from policies.framework.registry import ACTIONS, load_builtins
from policies.framework.tiers import give_back, take
from policies.framework.totals import job_totals
from policies.ordering import PendingIndex
from policies.resources import Resources
from policies.snapshot import OCCUPYING, READY, ROOT, JobInfo, NodeInfo, QueueInfo, Snapshot, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from policies.framework.placement import Placer
    from policies.profile import ReservationBook

MAX_REASONS = 4

_status = attrgetter("status")


class Plugin:
    """A policy, built by name from the conf's tiers.

    An instance serves one session at a time and is kept for the later sessions of the same tiers
    (``PluginSet``): ``hooks`` is asked once, when the instance is built, and ``on_session_open``
    must set everything the hooks read of a session.
    """

    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def hooks(self) -> dict[str, Fn]:
        """The hooks this plugin serves, by name; the conf's ``enableXxx: false`` leaves some out."""
        raise NotImplementedError

    def on_session_open(self, ssn: Session) -> None:
        """Take what the hooks need of this session."""

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to do by default."""


class Action:
    """One step of a cycle (Volcano's Action: a name and ``execute``)."""

    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        raise NotImplementedError


class Session:
    def __init__(self, conf: SchedulerConf, snapshot: Snapshot, clock: Clock) -> None:
        self.conf = conf
        self.clock = clock
        self.now = clock.now()
        self.whole_job = conf.placement == "job"
        self.nodes: list[NodeInfo] = list(snapshot.nodes)
        self._saved: dict[int, NodeInfo] = {}  # node index -> its state before this session changed it
        self.node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self.node_version = [0] * len(self.nodes)
        self.changes: list[int] = []
        self.usage = snapshot.usage
        self.index: PendingIndex | None = snapshot.pending
        self.jobs: dict[str, JobInfo] = {j.id: j for j in snapshot.jobs}
        if snapshot.held is not None:  # the caller keeps the totals of its jobs, which are all running
            self.pending_jobs: list[JobInfo] = []
            self.running_jobs = list(snapshot.jobs)
        else:
            self.pending_jobs = [j for j in snapshot.jobs if TaskStatus.PENDING in map(_status, j.tasks)]
            self.running_jobs = [j for j in snapshot.jobs if not OCCUPYING.isdisjoint(map(_status, j.tasks))]
        if snapshot.capacity is None:
            self.capacity = res.total(n.allocatable for n in self.nodes if not n.unschedulable)
        else:
            self.capacity = dict(snapshot.capacity)
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
        self._held_by_lane = snapshot.held
        self._totals = snapshot.totals
        self.releases = snapshot.releases
        self._build_tree()
        self.decisions = Decisions()
        self.inqueue: set[str] | None = None  # set by enqueue; None = every pending job may allocate
        self.blocked: list[JobInfo] = []  # jobs allocate stopped at, for reserve/backfill
        self.halted = False  # strict order: allocate met a blocked reservable job
        self.share_held = False  # some job was held back by its fair-share slice
        self.surplus = False  # the pie is spun again: fair-share slices no longer limit, caps still do
        self.book: ReservationBook | None = None
        self.reserved: set[str] = set()
        self._journal: dict[int, tuple[TaskInfo, TaskStatus, str]] = {}
        self._ready: dict[str, int] = {}
        self._waiting: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        # The counter each task status is counted in (a status in none, such as releasing, counts nowhere).
        self._counted_in = {status: self._ready for status in READY} | {
            TaskStatus.PIPELINED: self._waiting,
            TaskStatus.PENDING: self._pending,
        }
        from policies.framework.placement import Placer

        self.placer: Placer = Placer(self, snapshot.evaluations)
        self._plugin_set = take(conf.tiers, conf.hook_timing)
        self.plugins = self._plugin_set.plugins
        self.hooks = self._plugin_set.hooks
        self._hook = self.hooks.dispatchers()
        self.tree_share = self.hooks.tree_share()
        self.hooks.reset_seconds()
        for plugin in self.plugins:
            t0 = perf_counter()
            plugin.on_session_open(self)
            self.hooks.charge(plugin.name, perf_counter() - t0)

    # ---- tree and aggregates -------------------------------------------------------------------

    def _build_tree(self) -> None:
        held_by_lane = self._held_by_lane
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
        leaf_held, leaf_want = self._lane_totals()
        if self.index is not None:
            for lane in self.index.lanes():
                want = self.index.lane_request(lane)
                res.iadd(leaf_want.setdefault(lane[0], {}), want)
                res.iadd(self.tenant_requested.setdefault(lane, {}), want)
        for queue, held in leaf_held.items():
            self._add_up(self.allocated, queue, held)
        for queue, want in leaf_want.items():
            self._add_up(self.requested, queue, want)

    def _lane_totals(self) -> tuple[dict[str, Resources], dict[str, Resources]]:
        """Held and wanted resources of the snapshot's jobs per leaf, filling the per-tenant tables.

        From the caller's totals when it keeps them (running jobs only), else summed job by job (or
        taken from the caller's sums of the jobs it hands again)."""
        leaf_held: dict[str, Resources] = {}
        leaf_want: dict[str, Resources] = {}
        if self._held_by_lane is not None:  # the tenant tables are empty yet, and each lane is seen once
            for lane, holds in self._held_by_lane.items():
                res.iadd(leaf_held.setdefault(lane[0], {}), holds)
                self.tenant_allocated[lane] = dict(holds)
                self.tenant_requested[lane] = dict(holds)
            return leaf_held, {queue: dict(held) for queue, held in leaf_held.items()}
        kept = self._totals
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

    def _add_up(self, table: dict[str, Resources], queue: str, amount: Resources, times: float = 1.0) -> None:
        for path in self._to_root(queue):
            res.iadd(table.setdefault(path, {}), amount, times)

    def tree_key(self, queue: str, share: Callable[[str], float]) -> tuple[float, ...]:
        """Shares from the top level down to ``queue``: comparing these tuples walks the tree,
        picking the least-served child at each level (hierarchical DRF / fair share)."""
        return tuple([share(q) for q in reversed(self.ancestry(queue))])

    def leaf_queues(self) -> list[str]:
        return [q for q, kids in self.children.items() if not kids and q != ROOT]

    # ---- dispatch ------------------------------------------------------------------------------

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (self._hook["job_order"](job), job.submit_time, job.id)

    def task_key(self, task: TaskInfo) -> tuple[Any, ...]:
        return (self._hook["task_order"](task), task.index)

    def queue_key(self, queue: str) -> tuple[Any, ...]:
        return (self._hook["queue_order"](queue), queue)

    def tenant_key(self, queue: str, tenant: str) -> tuple[Any, ...]:
        return self._hook["tenant_order"](queue, tenant)  # type: ignore[no-any-return]

    def overused(self, queue: str) -> tuple[str, str] | None:
        return self._hook["overused"](queue)  # type: ignore[no-any-return]

    def job_valid(self, job: JobInfo) -> tuple[str, str] | None:
        return self._hook["job_valid"](job)  # type: ignore[no-any-return]

    def job_enqueueable(self, job: JobInfo) -> tuple[str, str] | None:
        return self._hook["job_enqueueable"](job)  # type: ignore[no-any-return]

    def job_reservable(self, job: JobInfo) -> bool:
        """No reservation plugin: nobody reserves (Volcano's greedy allocate)."""
        return self.hooks.has("job_reservable") and self._hook["job_reservable"](job) is None

    def allocatable(self, task: TaskInfo, job: JobInfo) -> tuple[str, str] | None:
        """Whether the job's queue (and tenant) may take ``task`` now: shares, caps, quotas."""
        return self._hook["allocatable"](task, job)  # type: ignore[no-any-return]

    def job_ready(self, job: JobInfo) -> bool:
        return bool(self._hook["job_ready"](job))

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._hook["job_pipelined"](job) is not False

    def job_starving(self, job: JobInfo) -> bool:
        return bool(self._hook["job_starving"](job))

    def predicate(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> tuple[str, str] | None:
        return self._hook["predicate"](task, job, node)  # type: ignore[no-any-return]

    def node_score(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
        return float(self._hook["node_order"](task, job, node))

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

    def _held(self, task: TaskInfo, job: JobInfo, sign: float) -> None:
        allocated, versions = self.allocated, self.allocated_version
        for path in self._to_root(job.queue):
            res.iadd(allocated.setdefault(path, {}), task.resources, sign)
            versions[path] = versions.get(path, 0) + 1
        lane = (job.queue, job.tenant)
        res.iadd(self.tenant_allocated.setdefault(lane, {}), task.resources, sign)
        self.tenant_version[lane] = self.tenant_version.get(lane, 0) + 1
        self._hook["on_allocate" if sign > 0 else "on_deallocate"](task, job)

    def _to_root(self, queue: str) -> tuple[str, ...]:
        """The queue's ancestry and the root: every total an allocation in it moves (kept per queue)."""
        known = self._upward.get(queue)
        if known is None:
            known = self._upward[queue] = (*self.ancestry(queue), ROOT)
        return known

    def allocate_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> object:
        self._touch(node)
        token = node.take(task.resources)
        self._set_status(task, job, TaskStatus.ALLOCATED, node.name)
        if self.book is not None:
            self.book.consume(node.name, task.resources, self.now, self.now + (job.walltime or float("inf")))
        self._held(task, job, 1.0)
        return token

    def unallocate_task(self, task: TaskInfo, job: JobInfo, node: NodeInfo, token: object) -> None:
        self._touch(node)
        node.give(task.resources, token)  # type: ignore[arg-type]
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

    def record_eviction(self, task: TaskInfo, job: JobInfo, reason: str) -> None:
        self.decisions.evictions.append(Eviction(job.id, task.uid, task.node, reason))

    # ---- reasons -------------------------------------------------------------------------------

    def why(self, job: JobInfo, code: str, source: str, message: str) -> None:
        """Record cheaply why ``job`` was not scheduled (the last few distinct reasons)."""
        reasons = self.decisions.reasons.setdefault(job.id, [])
        reason = Reason(code, source, message)
        if reason not in reasons:
            reasons.append(reason)
            del reasons[:-MAX_REASONS]

    def why_queue(self, queue: str, code: str, source: str, message: str) -> None:
        self.decisions.queue_reasons[queue] = Reason(code, source, message)

    # ---- lifecycle -----------------------------------------------------------------------------

    def run(self) -> None:
        """Run the conf's actions in order, timing each."""
        for name in self.conf.actions:
            action = ACTIONS[name](self.conf.action_arguments(name))
            t0 = perf_counter()
            action.execute(self)
            self.decisions.action_seconds[name] = self.decisions.action_seconds.get(name, 0.0) + perf_counter() - t0

    def close(self) -> Decisions:
        for plugin in self.plugins:
            t0 = perf_counter()
            plugin.on_session_close(self)
            self.hooks.charge(plugin.name, perf_counter() - t0)
        for task, status, node in self._journal.values():
            task.status = status
            task.node = node
        self._journal.clear()
        for i, saved in self._saved.items():
            self.nodes[i].restore(saved)
        self._saved.clear()
        self.decisions.plugin_seconds = dict(self.hooks.seconds)
        give_back(self._plugin_set)
        return self.decisions


def open_session(conf: SchedulerConf, snapshot: Snapshot, clock: Clock) -> Session:
    """Open a session: build the queue tree, open every plugin of every tier."""
    load_builtins()
    return Session(conf, snapshot, clock)


def close_session(ssn: Session) -> Decisions:
    """Close the plugins, restore the nodes and tasks the session touched, and return its decisions."""
    return ssn.close()
