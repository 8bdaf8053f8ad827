"""gang: a job starts with at least minAvailable tasks or not at all.

``preemptMode``: ``down-to-min`` (default) lets victims be taken from a gang only while it keeps
minAvailable running tasks (a single-task job may go, as in Volcano); ``whole`` offers any task,
and the evicting action then takes the whole gang down rather than leave it running below
minAvailable.
"""

from __future__ import annotations

from policies.framework.decisions import INVALID
from policies.framework.hooks import PERMIT, REJECT
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo, TaskInfo, TaskStatus

MODES = ("down-to-min", "whole")


@register_plugin
class Gang(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        mode = self.arguments.text("preemptMode", "down-to-min")
        if mode not in MODES:
            raise ValueError(f"gang: preemptMode must be one of {MODES}, got {mode!r}")

        def job_valid(job: JobInfo) -> str | None:
            valid = len(job.tasks) - [t.status for t in job.tasks].count(TaskStatus.FAILED)
            if valid < job.gang_size:
                return f"{INVALID}: {valid} valid tasks, minAvailable {job.gang_size}"
            return None

        def job_ready(job: JobInfo) -> bool:
            return ssn.ready_count(job) >= job.gang_size

        def job_pipelined(job: JobInfo) -> int:
            return PERMIT if ssn.ready_count(job) + ssn.pipelined_count(job) >= job.gang_size else REJECT

        def job_starving(job: JobInfo) -> bool:
            return ssn.ready_count(job) + ssn.pipelined_count(job) < job.gang_size

        def job_order(job: JobInfo) -> int:
            return 1 if ssn.ready_count(job) >= job.gang_size else 0

        def victims(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            if mode == "whole":
                return candidates
            taken: dict[str, int] = {}
            allowed = []
            for v in candidates:
                job = ssn.jobs[v.job]
                left = ssn.ready_count(job) - taken.get(v.job, 0) - 1
                if left >= job.gang_size or job.gang_size == 1:
                    taken[v.job] = taken.get(v.job, 0) + 1
                    allowed.append(v)
            return allowed

        ssn.add_hook("job_valid", self.name, job_valid)
        ssn.add_hook("job_ready", self.name, job_ready)
        ssn.add_hook("job_pipelined", self.name, job_pipelined)
        ssn.add_hook("job_starving", self.name, job_starving)
        ssn.add_hook("job_order", self.name, job_order)
        ssn.add_hook("preemptable", self.name, victims)
        ssn.add_hook("reclaimable", self.name, victims)
