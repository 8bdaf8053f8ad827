"""drf: Dominant Resource Fairness (Ghodsi et al., NSDI 2011).

Jobs with the smallest dominant share go first; with ``hierarchy: true`` queues are ordered by
weighted dominant share level by level down the queue tree (hierarchical DRF). A task may preempt
another only if afterwards the preemptor's share does not exceed the victim's.
"""

from __future__ import annotations

from policies import resources as res
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.resources import Resources
from policies.snapshot import OCCUPYING, JobInfo, TaskInfo

SHARE_DELTA = 1e-6


@register_plugin
class DRF(Plugin):
    name = "drf"
    ssn: Session
    total: Resources
    held: dict[str, Resources]

    def hooks(self) -> dict[str, Fn]:
        hooks: dict[str, Fn] = {"job_order": self.job_order}
        if self.arguments.flag("hierarchy", False):
            hooks["queue_order"] = self.queue_order
            hooks["queue_share"] = self.queue_share
        hooks |= {"on_allocate": self.on_allocate, "on_deallocate": self.on_deallocate, "preemptable": self.preemptable}
        return hooks

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total = ssn.capacity
        self.held = {}

    def allocated(self, job: JobInfo) -> Resources:
        got = self.held.get(job.id)
        if got is None:
            got = self.held[job.id] = res.total(t.resources for t in job.tasks if t.status in OCCUPYING)
        return got

    def job_order(self, job: JobInfo) -> float:
        return res.dominant_share(self.allocated(job), self.total)

    def queue_order(self, queue: str) -> tuple[float, ...]:
        return self.ssn.tree_key(queue, self.queue_share)

    def queue_share(self, queue: str) -> float:
        ssn = self.ssn
        return res.dominant_share(ssn.allocated[queue], self.total) / max(ssn.queues[queue].weight, SHARE_DELTA)

    def on_allocate(self, task: TaskInfo, job: JobInfo) -> None:
        res.iadd(self.allocated(job), task.resources)

    def on_deallocate(self, task: TaskInfo, job: JobInfo) -> None:
        res.iadd(self.allocated(job), task.resources, -1.0)

    def preemptable(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        jobs, total = self.ssn.jobs, self.total
        mine = res.dominant_share(res.add(self.allocated(jobs[preemptor.job]), preemptor.resources), total)
        return [
            v
            for v in victims
            if mine <= res.dominant_share(res.sub(self.allocated(jobs[v.job]), v.resources), total) + SHARE_DELTA
        ]
