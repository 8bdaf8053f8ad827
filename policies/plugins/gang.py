"""gang: a job starts with at least minAvailable tasks or not at all.

``preemptMode``: ``down-to-min`` (default) lets victims be taken from a gang only while it keeps
minAvailable running tasks (a single-task job may go, as in Volcano); ``whole`` offers any task,
and the evicting action then takes the whole gang down rather than leave it running below
minAvailable.
"""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.decisions import INVALID
from policies.framework.hooks import PERMIT, REJECT, Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo, TaskInfo, TaskStatus

MODES = ("down-to-min", "whole")


@register_plugin
class Gang(Plugin):
    name = "gang"
    ssn: Session

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.mode = arguments.text("preemptMode", "down-to-min")
        if self.mode not in MODES:
            raise ValueError(f"gang: preemptMode must be one of {MODES}, got {self.mode!r}")

    def hooks(self) -> dict[str, Fn]:
        return {
            "job_valid": self.job_valid,
            "job_ready": self.job_ready,
            "job_pipelined": self.job_pipelined,
            "job_starving": self.job_starving,
            "job_order": self.job_order,
            "preemptable": self.victims,
            "reclaimable": self.victims,
        }

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn

    @staticmethod
    def job_valid(job: JobInfo) -> str | None:
        valid = len(job.tasks) - [t.status for t in job.tasks].count(TaskStatus.FAILED)
        if valid < job.gang_size:
            return f"{INVALID}: {valid} valid tasks, minAvailable {job.gang_size}"
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return self.ssn.ready_count(job) >= job.gang_size

    def job_pipelined(self, job: JobInfo) -> int:
        ssn = self.ssn
        return PERMIT if ssn.ready_count(job) + ssn.pipelined_count(job) >= job.gang_size else REJECT

    def job_starving(self, job: JobInfo) -> bool:
        ssn = self.ssn
        return ssn.ready_count(job) + ssn.pipelined_count(job) < job.gang_size

    def job_order(self, job: JobInfo) -> int:
        return 1 if self.ssn.ready_count(job) >= job.gang_size else 0

    def victims(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        if self.mode == "whole":
            return candidates
        ssn = self.ssn
        taken: dict[str, int] = {}
        allowed = []
        for v in candidates:
            job = ssn.jobs[v.job]
            left = ssn.ready_count(job) - taken.get(v.job, 0) - 1
            if left >= job.gang_size or job.gang_size == 1:
                taken[v.job] = taken.get(v.job, 0) + 1
                allowed.append(v)
        return allowed
