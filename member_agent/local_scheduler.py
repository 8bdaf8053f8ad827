"""The member agent's local session scheduler: a policies session over this cluster's nodes.

Each cycle snapshots the backend's nodes (their ``used`` already counts running work) and the
agent's jobs, runs the configured actions (default ``enqueue, allocate, preempt, backfill``) and
returns what to launch and what to evict. Nothing here talks to the backend or the federation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from member_agent.backends.base import NodeView, TaskPhase
from member_agent.node_table import NodeTable
from member_agent.tracker import LocalJob
from policies import (
    JobInfo,
    NodeEvaluations,
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
from policies.framework.totals import JobTotals

DEFAULT_CONF = Path(__file__).resolve().parents[1] / "configs" / "scheduler.yaml"


@dataclass
class LocalPlan:
    """``launches``: tasks to start, by job: a job's gang (and what more fits) when it starts, or more
    tasks of a job already launched (an elastic job's beyond its gang). ``evictions``: jobs to stop
    whole; ``shrinks``: tasks to take from jobs that run on without them (down-to-min)."""

    launches: list[tuple[LocalJob, dict[tuple[str, int], str]]] = field(default_factory=list)
    evictions: list[tuple[LocalJob, str]] = field(default_factory=list)
    shrinks: list[tuple[LocalJob, list[tuple[str, int]], str]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)


def _job_info(job: LocalJob) -> JobInfo:
    """The job as a session sees it: its launched tasks running (or succeeded) where they run, the
    others pending (all of them before it starts; an elastic job's not yet placed after)."""
    spec = job.spec
    tasks: list[TaskInfo] = []
    if spec is not None:
        for task in spec.tasks:
            resources = dict(task.resources)
            tasks.extend(TaskInfo(job.job_id, task.name, i, resources) for i in range(task.replicas))
    running = {(s.task_name, s.index): s for s in job.tasks.values()}
    for info in tasks:
        if (info.name, info.index) not in job.placed:
            continue
        info.status = TaskStatus.RUNNING
        seen = running.get((info.name, info.index))
        if seen is not None:
            if seen.phase is TaskPhase.SUCCEEDED:
                info.status = TaskStatus.SUCCEEDED  # counts for its gang, holds nothing
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
        spread=spec is not None and spec.placement == "spread",
    )


def task_key(uid: str) -> tuple[str, int]:
    """``job/name-index`` (TaskInfo.uid) back to (task name, index)."""
    name, _, index = uid.rsplit("/", 1)[1].rpartition("-")
    return name, int(index)


class LocalScheduler:
    """One per agent: it remembers the agent's nodes, and how they suit each task shape, between cycles."""

    def __init__(self, clock: Clock, conf: SchedulerConf | None = None) -> None:
        self.clock = clock
        self.conf = conf if conf is not None else load_conf(DEFAULT_CONF)
        self.nodes = NodeTable()
        self._evaluations = NodeEvaluations()
        self._totals = JobTotals()
        self._running: dict[str, tuple[LocalJob, int, JobInfo]] = {}

    @classmethod
    def from_file(cls, clock: Clock, path: str | None) -> LocalScheduler:
        return cls(clock, load_conf(Path(path)) if path else None)

    def plan(self, pending: list[LocalJob], running: list[LocalJob], nodes: list[NodeView]) -> LocalPlan:
        """One session: which pending jobs start where, which further tasks of running jobs start where
        (an elastic job's beyond its gang, shared between jobs by the session's job order: DRF), and
        which running tasks to evict for them."""
        plan = LocalPlan()
        if not pending and not any(job.unplaced() for job in running):
            return plan
        by_id = {job.job_id: job for job in (*pending, *running)}
        jobs = [_job_info(job) for job in pending if job.spec is not None]
        jobs += self._running_infos(running)
        infos = self.nodes.update(nodes)
        snapshot = Snapshot(
            infos, jobs, evaluations=self._evaluations, capacity=self.nodes.capacity(), totals=self._totals
        )
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
            if job is not None:
                fresh = {key: node for key, node in placement.items() if key not in job.placed}
                if fresh:
                    plan.launches.append((job, fresh))
        evicted: dict[str, tuple[LocalJob, list[tuple[str, int]], str]] = {}
        for eviction in decisions.evictions:
            job = by_id.get(eviction.job)
            if job is not None and job.launched:
                evicted.setdefault(job.job_id, (job, [], eviction.reason))[1].append(task_key(eviction.task))
        for job, keys, reason in evicted.values():
            running_keys = {(s.task_name, s.index) for s in job.tasks.values() if not s.phase.terminal}
            if running_keys - set(keys):  # the job keeps its gang (down-to-min): only these go
                plan.shrinks.append((job, keys, reason))
            else:
                plan.evictions.append((job, reason))
        for job_id, reasons in decisions.reasons.items():
            if reasons:
                plan.reasons[job_id] = reasons[-1].message
        if decisions.tenant_reasons:  # a pass went over a tenant's jobs in a queue: they wait for its reason
            for info in jobs:
                passed_over = decisions.tenant_reasons.get((info.queue, info.tenant))
                if passed_over is not None and info.id not in plan.reasons and info.id not in placements:
                    plan.reasons[info.id] = passed_over.message
        return plan

    def _running_infos(self, running: list[LocalJob]) -> list[JobInfo]:
        """The running jobs as sessions see them. A job unchanged since the last cycle (its ``version``:
        task statuses and placed tasks) keeps its JobInfo: a session puts back every task state it changes."""
        known = self._running
        self._running = {}
        out = []
        for job in running:
            if job.spec is None or not (job.tasks or job.placed):
                continue
            seen = known.get(job.job_id)
            info = seen[2] if seen is not None and seen[0] is job and seen[1] == job.version else None
            if info is None:
                info = _job_info(job)
            self._running[job.job_id] = (job, job.version, info)
            out.append(info)
        return out

    def never_fits(self, pending: list[LocalJob], nodes: list[NodeView]) -> list[LocalJob]:
        """Jobs with a task bigger than every node here: hand them back instead of holding them."""
        self.nodes.update(nodes)
        shapes = self.nodes.sizes()
        out = []
        for job in pending:
            if job.spec is None:
                continue
            for task in job.spec.tasks:
                if not any(res.fits(task.resources, shape) for shape in shapes):
                    out.append(job)
                    break
        return out
