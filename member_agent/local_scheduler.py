"""The member agent's local session scheduler: a policies session over this cluster's nodes.

Each cycle snapshots the backend's nodes (their ``used`` already counts running work) and the
agent's jobs, runs the configured actions (default ``enqueue, allocate, preempt, backfill``) and
returns what to launch and what to evict. Nothing here talks to the backend or the federation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from pathlib import Path

from member_agent.backends.base import NodeView
from member_agent.tracker import LocalJob
from policies import (
    JobInfo,
    NodeEvaluations,
    NodeInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    TaskStatus,
    close_session,
    load_conf,
    open_session,
)
from policies import resources as res
from policies.clock import Clock
from policies.resources import Resources

DEFAULT_CONF = Path(__file__).resolve().parents[1] / "configs" / "scheduler.yaml"


@dataclass
class LocalPlan:
    launches: list[tuple[LocalJob, dict[tuple[str, int], str]]] = field(default_factory=list)
    evictions: list[tuple[LocalJob, str]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)


def _job_info(job: LocalJob, status: TaskStatus) -> JobInfo:
    spec = job.spec
    tasks: list[TaskInfo] = []
    if spec is not None:
        for task in spec.tasks:
            resources = dict(task.resources)
            tasks.extend(TaskInfo(job.job_id, task.name, i, resources, status) for i in range(task.replicas))
    running = {(s.task_name, s.index): s for s in job.tasks.values()}
    for info in tasks:
        seen = running.get((info.name, info.index))
        if seen is not None:
            info.node = seen.node
            info.start_time = seen.started_at
            if seen.started_at is not None and spec is not None and spec.walltime is not None:
                info.expected_end = seen.started_at + spec.walltime
    return JobInfo(
        job.job_id,
        job.queue or "default",
        job.tenant,
        priority=job.priority,
        submit_time=job.submit_time,
        min_available=spec.min_available or 0 if spec is not None else 0,
        preemptible=spec.preemptible if spec is not None else False,
        walltime=spec.walltime if spec is not None else None,
        tasks=tasks,
        waiting_since=job.admitted_at,
    )


def task_key(uid: str) -> tuple[str, int]:
    """``job/name-index`` (TaskInfo.uid) back to (task name, index)."""
    name, _, index = uid.rsplit("/", 1)[1].rpartition("-")
    return name, int(index)


Size = tuple[tuple[str, float], ...]


def _size(view: NodeView) -> Size | None:
    """The node's allocatable as a key (in its own order, which the capacity's sum follows), or None
    for a cordoned node: all that ``never_fits`` and the capacity read of a node."""
    return None if view.unschedulable else tuple(view.allocatable.items())


def _node_info(view: NodeView) -> NodeInfo:
    """The node as a session sees it; idle is worked out here as NodeInfo would (allocatable less
    used, in allocatable's order), without a copy and a second pass: ~20 nodes change per cycle."""
    allocatable = dict(view.allocatable)
    used = {r: view.used.get(r, 0.0) for r in allocatable}
    idle = {r: q - used[r] for r, q in allocatable.items()}
    return NodeInfo(view.name, allocatable, idle, used, labels=dict(view.labels), unschedulable=view.unschedulable)


class LocalScheduler:
    """One per agent: it remembers the agent's nodes, and how they suit each task shape, between cycles."""

    def __init__(self, clock: Clock, conf: SchedulerConf | None = None) -> None:
        self.clock = clock
        self.conf = conf if conf is not None else load_conf(DEFAULT_CONF)
        self._views: list[NodeView] = []  # the last cycle's node views, and the NodeInfo of each
        self._infos: list[NodeInfo] = []
        self._keys: list[Size | None] = []  # each node's size, and how many nodes have each
        self._sizes: Counter[Size | None] = Counter()
        self._capacity: Resources | None = None  # the schedulable nodes' total; None: to be summed again
        self._evaluations = NodeEvaluations()
        self._running: dict[str, tuple[LocalJob, tuple[object, ...], JobInfo]] = {}

    @classmethod
    def from_file(cls, clock: Clock, path: str | None) -> LocalScheduler:
        return cls(clock, load_conf(Path(path)) if path else None)

    def plan(self, pending: list[LocalJob], running: list[LocalJob], nodes: list[NodeView]) -> LocalPlan:
        """One session: which pending jobs start where, and which running ones to evict for them."""
        plan = LocalPlan()
        if not pending:
            return plan
        by_id = {job.job_id: job for job in (*pending, *running)}
        jobs = [_job_info(job, TaskStatus.PENDING) for job in pending if job.spec is not None]
        jobs += self._running_infos(running)
        infos = self._node_infos(nodes)
        if self._capacity is None:  # summed as a session would, in node order: the same floats
            self._capacity = res.total(n.allocatable for n in infos if not n.unschedulable)
        snapshot = Snapshot(infos, jobs, evaluations=self._evaluations, capacity=self._capacity)
        session = open_session(self.conf, snapshot, self.clock)
        try:
            session.run()
        finally:  # the nodes, kept for the next cycle, come back as they were even if a plugin fails
            decisions = close_session(session)
        placements: dict[str, dict[tuple[str, int], str]] = {}
        for bind in decisions.binds:
            placements.setdefault(bind.job, {})[task_key(bind.task)] = bind.node
        for job_id, placement in placements.items():
            job = by_id.get(job_id)
            if job is not None and not job.launched:
                plan.launches.append((job, placement))
        evicted: set[str] = set()
        for eviction in decisions.evictions:
            job = by_id.get(eviction.job)
            if job is not None and job.launched and eviction.job not in evicted:
                evicted.add(eviction.job)
                plan.evictions.append((job, eviction.reason))
        for job_id, reasons in decisions.reasons.items():
            if reasons:
                plan.reasons[job_id] = reasons[-1].message
        return plan

    def _running_infos(self, running: list[LocalJob]) -> list[JobInfo]:
        """The running jobs as sessions see them. A job whose task statuses are those of the last cycle
        keeps its JobInfo: a session puts back every task state it changes."""
        known = self._running
        self._running = {}
        out = []
        for job in running:
            if job.spec is None or not job.tasks:
                continue
            statuses = tuple(job.tasks.values())
            seen = known.get(job.job_id)
            info = seen[2] if seen is not None and seen[0] is job and seen[1] == statuses else None
            if info is None:
                info = _job_info(job, TaskStatus.RUNNING)
            self._running[job.job_id] = (job, statuses, info)
            out.append(info)
        return out

    def _node_infos(self, views: list[NodeView]) -> list[NodeInfo]:
        """The session's nodes. A view the backend hands out again in the same place (the simulated
        backend shares a node's view until its usage changes) keeps its NodeInfo: a session puts
        back every node it changes, so a NodeInfo is the same between sessions as when it was built.
        The nodes' sizes follow the views that changed; the capacity is summed again when one did."""
        before = self._views
        if len(before) != len(views):
            self._views = list(views)
            self._infos = [_node_info(view) for view in views]
            self._keys = [_size(view) for view in views]
            self._sizes = Counter(self._keys)
            self._capacity = None
            return list(self._infos)
        infos, keys, sizes = self._infos, self._keys, self._sizes
        for i in compress(range(len(views)), map(is_not, views, before)):  # identity tests in C
            view = before[i] = views[i]
            infos[i] = _node_info(view)
            size = _size(view)
            if size != keys[i]:
                sizes[keys[i]] -= 1
                sizes[size] += 1
                keys[i] = size
                self._capacity = None
        return list(infos)

    def never_fits(self, pending: list[LocalJob], nodes: list[NodeView]) -> list[LocalJob]:
        """Jobs with a task bigger than every node here: hand them back instead of holding them."""
        self._node_infos(nodes)
        # A cluster has a handful of node sizes, not a thousand nodes.
        shapes = [dict(size) for size, count in self._sizes.items() if size is not None and count > 0]
        out = []
        for job in pending:
            if job.spec is None:
                continue
            for task in job.spec.tasks:
                if not any(res.fits(task.resources, shape) for shape in shapes):
                    out.append(job)
                    break
        return out
