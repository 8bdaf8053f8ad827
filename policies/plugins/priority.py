"""priority: higher job priority first; a job may preempt only lower-priority jobs."""

from __future__ import annotations

from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo, TaskInfo


@register_plugin
class Priority(Plugin):
    name = "priority"
    jobs: dict[str, JobInfo]

    def hooks(self) -> dict[str, Fn]:
        return {"job_order": self.job_order, "preemptable": self.preemptable}

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = ssn.jobs

    @staticmethod
    def job_order(job: JobInfo) -> int:
        return -job.priority

    def preemptable(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        jobs = self.jobs
        mine = jobs[preemptor.job].priority
        return [v for v in victims if jobs[v.job].priority < mine]
