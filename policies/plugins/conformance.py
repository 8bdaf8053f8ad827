"""conformance: jobs that must never be evicted (non-preemptible, or in protected queues)."""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo, TaskInfo


@register_plugin
class Conformance(Plugin):
    name = "conformance"
    jobs: dict[str, JobInfo]

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.protected = set(arguments.get("protectedQueues", ["system"]))

    def hooks(self) -> dict[str, Fn]:
        return {"preemptable": self.evictable, "reclaimable": self.evictable}

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = ssn.jobs

    def evictable(self, _: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        protected = self.protected
        out = []
        for v in candidates:
            job = self.jobs[v.job]
            if job.preemptible and job.queue not in protected and job.queue.split(".", 1)[0] not in protected:
                out.append(v)
        return out
