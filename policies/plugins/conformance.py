"""conformance: jobs that must never be evicted (non-preemptible, or in protected queues)."""

from __future__ import annotations

from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import TaskInfo


@register_plugin
class Conformance(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        protected = set(self.arguments.get("protectedQueues", ["system"]))

        def evictable(_: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            out = []
            for v in candidates:
                job = ssn.jobs[v.job]
                if job.preemptible and job.queue not in protected and job.queue.split(".", 1)[0] not in protected:
                    out.append(v)
            return out

        ssn.add_hook("preemptable", self.name, evictable)
        ssn.add_hook("reclaimable", self.name, evictable)
