"""priority: higher job priority first; a job may preempt only lower-priority jobs."""

from __future__ import annotations

from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo, TaskInfo


@register_plugin
class Priority(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        jobs = ssn.jobs

        def job_order(job: JobInfo) -> int:
            return -job.priority

        def preemptable(preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
            mine = jobs[preemptor.job].priority
            return [v for v in victims if jobs[v.job].priority < mine]

        ssn.add_hook("job_order", self.name, job_order)
        ssn.add_hook("preemptable", self.name, preemptable)
