"""Making room for a starving job by evicting others: shared by preempt and reclaim.

The framework, not a plugin, enforces the promises: a non-preemptible job is never a victim, a
victim has run for at least the grace period, no queue is taken below its guarantee by another
queue, at most ``maxEvictions`` tasks go per cycle, and a gang is never left running below its
minAvailable (it goes whole instead). Plugins (priority, gang, drf, proportion, conformance) then
narrow the candidates through the ``preemptable`` / ``reclaimable`` hooks, which meet them in the one
victim order (``Evictor.victim_key``): lowest priority first, tasks beyond minAvailable before whole
jobs, then the least run time lost.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from policies import resources as res
from policies.framework.decisions import PREEMPTING
from policies.framework.session import Session
from policies.framework.statement import Statement
from policies.resources import EPS, Resources
from policies.snapshot import EVICTABLE, JobInfo, NodeInfo, TaskInfo, TaskStatus


class Evictor:
    def __init__(self, ssn: Session, hook: str, reason: str, grace: float, budget: int, verb: str) -> None:
        self.ssn = ssn
        self.hook = hook
        self.reason = reason
        self.verb = verb  # what the waiting job's reason says it will do: "preempt", "reclaim from"
        self.action = "preempt" if hook == "preemptable" else "reclaim"
        self.budget = budget
        self.used = 0
        self.by_node: dict[str, list[TaskInfo]] = {}
        for job in ssn.running_jobs:
            if not job.preemptible:
                continue
            for t in job.tasks:
                started = t.start_time if t.start_time is not None else job.start_time
                if t.status in EVICTABLE and t.node and (started is None or ssn.now - started >= grace):
                    self.by_node.setdefault(t.node, []).append(t)

    def victim_key(self, victim: TaskInfo) -> tuple[int, bool, float]:
        """The one victim order of preempt and reclaim: lowest priority first; then a task beyond its
        gang's minAvailable (its job keeps running, down-to-min) before one whose job goes whole; then
        the least run time lost (most recently started). Ties keep the order jobs were placed in."""
        job = self.ssn.jobs[victim.job]
        beyond = self.ssn.ready_count(job) > job.gang_size
        started = victim.start_time if victim.start_time is not None else job.start_time
        return job.priority, not beyond, -(started or 0.0)

    def _unit(self, victim: TaskInfo) -> list[TaskInfo]:
        """The victim alone, or its whole gang if losing it would leave the gang short. On clusters
        (whole-job placement) always the whole run: the federation stops a job's run, not some of its
        tasks (its member's own session takes an elastic job's extra tasks first, down-to-min)."""
        job = self.ssn.jobs[victim.job]
        if not self.ssn.whole_job and self.ssn.ready_count(job) - 1 >= job.gang_size:
            return [victim]
        return [t for t in job.tasks if t.status in EVICTABLE]

    def _protected(self, victims: list[TaskInfo], job: JobInfo, preemptor: JobInfo) -> bool:
        """Taking ``victims`` would bring their queue (or an ancestor) below its guarantee."""
        if job.queue == preemptor.queue:
            return False
        ssn = self.ssn
        freed = res.total(v.resources for v in victims)
        shared = set(ssn.ancestry(preemptor.queue))
        for q in ssn.ancestry(job.queue):
            if q in shared:
                break
            guarantee = ssn.queues[q].guarantee
            after = res.sub(ssn.allocated[q], freed)
            if any(after.get(r, 0.0) + EPS < g for r, g in guarantee.items() if freed.get(r, 0.0) > 0):
                return True
        return False

    def make_room(self, stmt: Statement, job: JobInfo, accept: Callable[[TaskInfo], bool]) -> bool:
        """Pipeline every pending task of ``job`` (its gang on one cluster when whole-job), evicting as needed."""
        ssn = self.ssn
        if ssn.whole_job:
            return self._make_room_whole(stmt, job, accept)
        for task in ssn.pending_tasks(job):
            if not self._held_by_room(job, task.resources):
                return False
            if not any(
                self._room_on(stmt, job, [task], task.resources, node, accept) for node in self._nodes(task, job)
            ):
                return False
            if ssn.job_pipelined(job) and ssn.pipelined_count(job) + ssn.ready_count(job) >= job.gang_size:
                return True
        return True

    def _held_by_room(self, job: JobInfo, need: Resources) -> bool:
        """Reclaim makes room only for a job that only room holds back: its queue's limits let it take ``need``."""
        return self.hook != "reclaimable" or self.ssn.allocatable(TaskInfo(job.id, "*", -1, need), job) is None

    def _make_room_whole(self, stmt: Statement, job: JobInfo, accept: Callable[[TaskInfo], bool]) -> bool:
        """The gang on the one cluster where making room costs least (``cost``), judged node by node:
        no eviction when some cluster has room for it now, none on a cluster whose nodes could never
        hold it. An elastic job's gang is its minAvailable: the tasks beyond it wait for room."""
        ssn = self.ssn
        tasks = ssn.gang_to_place(job)
        if not tasks:
            return False
        need = res.total(t.resources for t in tasks)
        if not self._held_by_room(job, need):
            return False
        reqs = job.gang_runs()  # a job at the federation is placed whole or not at all: its pending tasks are all
        probe = max(tasks, key=lambda t: sum(t.resources.values()))
        fitting = [n for n in ssn.nodes if not n.unschedulable and ssn.predicate(probe, job, n) is None]
        if any(n.packs(reqs, job.spread) for n in fitting):
            return False  # room without evicting: the job is held by policy or a reservation, not by room
        best: tuple[tuple[float, ...], NodeInfo] | None = None
        for node in fitting:
            if node.name not in self.by_node or not node.could_hold(reqs, job.spread):
                continue
            mark, used = stmt.mark(), self.used
            if self._room_on(stmt, job, tasks, need, node, accept):
                cost = self.cost(stmt.victims(mark))
                if best is None or cost < best[0]:
                    best = (cost, node)
                stmt.rollback_to(mark)
                self.used = used
        return best is not None and self._room_on(stmt, job, tasks, need, best[1], accept)

    def _enough(self, node: NodeInfo, need: Resources) -> bool:
        """Room for ``need`` once what is releasing is gone. On a cluster, ``need`` is a gang whose
        nodes ``could_hold`` already judged; what victims free is known by total, not by node, so the
        total decides (the member's own session places the gang when the victims are gone)."""
        if not self.ssn.whole_job:
            return node.fits_future(need)
        return res.fits(need, res.sub(res.add(node.idle, node.releasing), node.pipelined))

    def cost(self, victims: list[JobInfo]) -> tuple[float, ...]:
        """What evicting ``victims`` costs: the highest priority among them, then the run time lost
        (seconds of every victim run so far), then how many. Lower is cheaper."""
        now = self.ssn.now
        lost = sum(now - job.start_time for job in victims if job.start_time is not None)
        return max((job.priority for job in victims), default=-math.inf), lost, len(victims)

    def _nodes(self, task: TaskInfo, job: JobInfo) -> list[NodeInfo]:
        ssn = self.ssn
        return [n for n in ssn.nodes if (n.name in self.by_node or n.releasing) and ssn.predicate(task, job, n) is None]

    def _room_on(
        self,
        stmt: Statement,
        job: JobInfo,
        group: list[TaskInfo],
        need: Resources,
        node: NodeInfo,
        accept: Callable[[TaskInfo], bool],
    ) -> bool:
        ssn = self.ssn
        if not ssn.whole_job and node.fits(need):  # whole: make_room asked packs of every cluster
            return False  # room without evicting: the job is held by policy, not by this node
        mark, used = stmt.mark(), self.used
        if not self._enough(node, need):
            candidates = [
                v for v in self.by_node.get(node.name, []) if v.status in EVICTABLE and v.job != job.id and accept(v)
            ]
            # In victim order before the hooks narrow them: a hook that takes victims until a queue is
            # down to its share (fairshare's, proportion's) must meet the cheapest first.
            candidates.sort(key=self.victim_key)
            allowed = ssn.hooks.call(self.hook, group[0], candidates) or []
            allowed.sort(key=self.victim_key)
            for victim in allowed:
                if victim.status not in EVICTABLE:
                    continue
                unit = self._unit(victim)
                owner = ssn.jobs[victim.job]
                if self.used + len(unit) > self.budget or self._protected(unit, owner, job):
                    continue
                for v in unit:
                    stmt.evict(v, owner, self.reason.format(job=job.id), self.action)
                self.used += len(unit)
                if self._enough(node, need):
                    break
        if not self._enough(node, need):
            stmt.rollback_to(mark)
            self.used = used
            return False
        for t in group:
            stmt.pipeline(t, job, node)
        return True


def starving(ssn: Session) -> list[JobInfo]:
    """Starving pending jobs in job order: the would-be preemptors. From a PendingIndex only the
    jobs this session already looked at (they carry a reason), so a long backlog costs nothing."""
    seen = {j.id: j for j in ssn.pending_jobs}
    seen.update((j, ssn.jobs[j]) for j in ssn.decisions.reasons if j in ssn.jobs)
    jobs = [j for j in seen.values() if ssn.pending_count(j) > 0 and ssn.job_starving(j)]
    return sorted(jobs, key=ssn.job_key)


def run_evictions(
    ssn: Session, evictor: Evictor, lookahead: int, accept_for: Callable[[JobInfo], Callable[[TaskInfo], bool] | None]
) -> None:
    """For each starving job in order, evict for it and keep the result if its gang is then pipelined."""
    if not evictor.by_node:
        return
    missed = 0
    for job in starving(ssn):
        if missed >= lookahead or evictor.used >= evictor.budget:
            break
        accept = accept_for(job)
        if accept is None:
            continue
        stmt = Statement(ssn)
        if evictor.make_room(stmt, job, accept) and ssn.job_pipelined(job):
            victims = stmt.victims()
            where = sorted({t.node for t in job.tasks if t.status is TaskStatus.PIPELINED})
            stmt.commit(bind=False)
            if victims:
                noun = "job" if len(victims) == 1 else "jobs"
                message = f"will {evictor.verb} {len(victims)} {noun} on {', '.join(where)}"
                ssn.why(job, PREEMPTING, evictor.hook, message)
            missed = 0
        else:
            stmt.discard()
            missed += 1
