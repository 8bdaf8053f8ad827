"""reservation: which blocked jobs may reserve resources, after ``after`` seconds of waiting.

``after: 0`` reserves at once (EASY); a longer wait lets short-lived contention pass without
holding resources idle ("reserve conditionally, after a timeout").
"""

from __future__ import annotations

from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo


@register_plugin
class Reservation(Plugin):
    name = "reservation"

    def on_session_open(self, ssn: Session) -> None:
        after = self.arguments.duration("after", 0)

        def job_reservable(job: JobInfo) -> str | None:
            waited = ssn.now - job.waiting_from
            if waited >= after:
                return None
            return f"waited {waited:.0f}s of the {after:.0f}s before a job may reserve"

        ssn.add_hook("job_reservable", self.name, job_reservable)
