"""drf: Dominant Resource Fairness (Ghodsi et al., NSDI 2011).

Jobs with the smallest dominant share go first; with ``hierarchy: true`` queues are ordered by
weighted dominant share level by level down the queue tree (hierarchical DRF). A task may preempt
another only if afterwards the preemptor's share does not exceed the victim's.
"""

from __future__ import annotations

from policies import resources as res
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.resources import Resources
from policies.snapshot import OCCUPYING, JobInfo, TaskInfo

SHARE_DELTA = 1e-6


@register_plugin
class DRF(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.capacity
        held: dict[str, Resources] = {}

        def allocated(job: JobInfo) -> Resources:
            got = held.get(job.id)
            if got is None:
                got = held[job.id] = res.total(t.resources for t in job.tasks if t.status in OCCUPYING)
            return got

        def job_order(job: JobInfo) -> float:
            return res.dominant_share(allocated(job), total)

        def queue_order(queue: str) -> tuple[float, ...]:
            return ssn.tree_key(
                queue, lambda q: res.dominant_share(ssn.allocated[q], total) / max(ssn.queues[q].weight, SHARE_DELTA)
            )

        def on_allocate(task: TaskInfo, job: JobInfo) -> None:
            res.iadd(allocated(job), task.resources)

        def on_deallocate(task: TaskInfo, job: JobInfo) -> None:
            res.iadd(allocated(job), task.resources, -1.0)

        def preemptable(preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
            mine = res.dominant_share(res.add(allocated(ssn.jobs[preemptor.job]), preemptor.resources), total)
            return [
                v
                for v in victims
                if mine <= res.dominant_share(res.sub(allocated(ssn.jobs[v.job]), v.resources), total) + SHARE_DELTA
            ]

        ssn.add_hook("job_order", self.name, job_order)
        if self.arguments.flag("hierarchy", False):
            ssn.add_hook("queue_order", self.name, queue_order)
        ssn.add_hook("on_allocate", self.name, on_allocate)
        ssn.add_hook("on_deallocate", self.name, on_deallocate)
        ssn.add_hook("preemptable", self.name, preemptable)
