"""reservation: which blocked jobs may reserve resources, after ``after`` seconds of waiting.

``after: 0`` reserves at once (EASY); a longer wait lets short-lived contention pass without
holding resources idle ("reserve conditionally, after a timeout").
"""

from __future__ import annotations

from policies.format import format_span
from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.snapshot import JobInfo


@register_plugin
class ReservationPlugin(Plugin):
    """Gates ``job_reservable``; the ``Reservation`` a session books is in ``policies.framework.decisions``."""

    name = "reservation"
    now: float

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.after = arguments.duration("after", 0)

    def hooks(self) -> dict[str, Fn]:
        return {"job_reservable": self.job_reservable}

    def on_session_open(self, ssn: Session) -> None:
        self.now = ssn.now

    def job_reservable(self, job: JobInfo) -> str | None:
        waited = self.now - job.waiting_from
        if waited >= self.after:
            return None
        return f"waited {format_span(waited)} of the {format_span(self.after)} before a job may reserve"
