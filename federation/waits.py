"""Why a job is not running yet: one short code and a long text, for ``fedq jobs``, the dashboard's Jobs
view and ``fedq explain`` alike (the API adds it to each listed job as ``wait``).

The codes are Slurm's squeue reason codes where Slurm has one (Slurm's "Job Reason Codes",
https://slurm.schedmd.com/job_reason_codes.html, listed in squeue(1) under JOB REASON CODES), so a
Slurm user reads them at a glance; ``CODES`` says what each means here.

It is worked out from two things any API replica can read: the job's list view (its index entry: its
state, hold, retry time, dependencies, array) and the leader's last published status
(``status/scheduler``: each cycle's reasons, reservations and line for the first jobs, the queues held
whole, the jobs waiting on dependencies, the throttled arrays). The leader writes that status only when
it changes, never a job's record for a reason, so waiting costs no store writes however many wait.
A job past the status's published part is behind at least that many others in line: Priority.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from federation import keys
from federation.store import Store

CODES = {
    "Resources": "no cluster that could run it has room for it now",
    "Priority": "jobs ahead of it in fair-share order take what is free",
    "Reservation": "a reservation for a job ahead of it holds the room it would take (backfill would delay it)",
    "QueueCap": "its queue is at its cap (Slurm's AssocGrp* limits)",
    "Dependency": "it waits on jobs of its dependsOn",
    "DependencyNeverSatisfied": "a dependency can never be met: it will not run",
    "JobHeldUser": "held by its tenant: `fedq release` lets it run",
    "JobHeldAdmin": "held by an admin: only an admin's `fedq release` lets it run",
    "BeginTime": "back in the queue after a failed run: not started again before its retry time",
    "ArrayThrottle": "its array has as many elements running as its parallelism allows (Slurm's JobArrayTaskLimit)",
    "ReqNodeNotAvail": "the clusters that could run it are cordoned or unreachable",
    "Unschedulable": "no joined cluster could ever run it",
    "None": "no scheduling cycle has considered it yet",
}
"""Every code a waiting job may carry, with what it means (docs/semantics.md, Why a job waits)."""

# The session's reason codes (``policies.framework.decisions``), most telling first: a job held by
# several policies in one cycle shows the first of them.
_POLICY = (
    ("cap", "QueueCap"),
    ("reservation", "Reservation"),
    ("preempting", "Resources"),
    ("reserved", "Resources"),
    ("fair-share", "Priority"),
    ("overused", "Priority"),
    ("order", "Priority"),
    ("not-enqueued", "Priority"),
    ("waiting", "Priority"),
    ("gang", "Resources"),
    ("insufficient", "Resources"),
    ("spread", "Resources"),
    ("cordoned", "ReqNodeNotAvail"),
    ("labels", "Unschedulable"),
    ("too-big", "Unschedulable"),
    ("invalid", "Unschedulable"),
)
_RANK = {policy: rank for rank, (policy, _) in enumerate(_POLICY)}
_CODE_OF = dict(_POLICY)


@dataclass(frozen=True, slots=True)
class Wait:
    code: str
    text: str
    start: float | None = None  # the projected start, when the scheduler has one (its reservation)

    def view(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text, "start": self.start}


@dataclass(frozen=True)
class SchedulerView:
    """The leader's published status, as the questions below need it."""

    time: float | None = None
    reasons: dict[str, list[list[str]]] = field(default_factory=dict)
    queue_reasons: dict[str, list[str]] = field(default_factory=dict)
    tenant_reasons: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # queue -> tenant -> reason
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    dependency: dict[str, str] = field(default_factory=dict)
    dependency_all: bool = True
    throttled: dict[str, list[Any]] = field(default_factory=dict)
    behind: frozenset[str] = frozenset()
    """Jobs of the line after the first that waits for room: that one's room comes first (Priority)."""
    status: Mapping[str, Any] = field(default_factory=dict)
    """The whole status as published (``explain`` reads its line and whether the loop is failing)."""

    @classmethod
    def of(cls, status: Mapping[str, Any]) -> SchedulerView:
        reasons, reservations = status.get("reasons", {}), status.get("reservations", {})
        line = [job for job, _ in status.get("line", [])]
        first = next(
            (
                at
                for at, job in enumerate(line)
                if job in reservations or _policy(reasons.get(job, []))[0] == "Resources"
            ),
            len(line),
        )
        return cls(
            status.get("time"),
            reasons,
            status.get("queue_reasons", {}),
            status.get("tenant_reasons", {}),
            reservations,
            status.get("dependency", {}),
            status.get("dependency_all", True),
            status.get("throttled", {}),
            frozenset(line[first + 1 :]),
            status,
        )

    def held_reason(self, queue: str, tenant: str) -> list[str] | None:
        """Why a job the cycle did not try waits: its tenant was held back in its queue (a pass went
        over its jobs), or its queue was held as a whole."""
        return self.tenant_reasons.get(queue, {}).get(tenant) or self.queue_reason(queue)

    def queue_reason(self, queue: str) -> list[str] | None:
        """A queue held as a whole (at its share, at its cap) holds every job in it and below it."""
        parts = queue.split(".")
        for depth in range(len(parts), 0, -1):
            reason = self.queue_reasons.get(".".join(parts[:depth]))
            if reason is not None:
                return reason
        return None


class StatusCache:
    """The leader's status, parsed again only when its key's revision moves (it is read per listed page)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._revision = -1
        self._view = SchedulerView()

    async def get(self) -> SchedulerView:
        kv = await self._store.get(keys.STATUS)
        if kv is None:
            self._revision, self._view = -1, SchedulerView()
        elif kv.mod_revision != self._revision:
            self._view, self._revision = SchedulerView.of(json.loads(kv.value)), kv.mod_revision
        return self._view


def _policy(reasons: list[list[str]]) -> tuple[str, str]:
    """The code of the most telling of a job's policy reasons, and its message ("" and "": none)."""
    known = [reason for reason in reasons if reason[0] in _RANK]
    if not known:
        return "", ""
    policy, _, message = min(known, key=lambda reason: _RANK[reason[0]])
    return _CODE_OF[policy], message


def _said(code: str, message: str = "") -> str:
    return f"{CODES[code]}: {message}" if message and message != CODES[code] else CODES[code]


def wait_of(job: Mapping[str, Any], view: SchedulerView, now: float) -> Wait | None:
    """Why the job (its list view, ``JobRecord.summary``) is not running; None unless it is queued."""
    if job["state"] not in ("Pending", "Reserved", "Unschedulable"):
        return None
    job_id = job["id"]
    held_by = job.get("held_by")
    if held_by is not None:
        code = "JobHeldAdmin" if held_by.startswith("admin/") else "JobHeldUser"  # as only an admin may release
        return Wait(code, _said(code, f"held by {held_by}"))
    if job["state"] == "Unschedulable":
        return Wait("Unschedulable", _said("Unschedulable", job.get("reason", "")))
    if job.get("waits"):
        blocked = view.dependency.get(job_id)
        if blocked is None and not view.dependency_all and job_id not in view.reasons:
            blocked = "Dependency"  # past the published part: its dependencies are the likelier reason
        if blocked is not None:
            return Wait(blocked, _said(blocked, job.get("reason", "") if blocked == "DependencyNeverSatisfied" else ""))
    retry_at = job.get("retry_at")
    if retry_at is not None and retry_at > now:
        return Wait("BeginTime", CODES["BeginTime"], retry_at)
    throttle = view.throttled.get(job.get("array_id") or "")
    if throttle is not None and job_id not in throttle[2]:
        running, limit = throttle[0], throttle[1]
        return Wait("ArrayThrottle", _said("ArrayThrottle", f"{running} of its array on clusters, parallelism {limit}"))
    if view.time is None or view.time < job["submit_time"]:
        return Wait("None", CODES["None"])
    reservation = view.reservations.get(job_id)
    start = reservation["start"] if reservation is not None else None
    policies = view.reasons.get(job_id) or ([] if (q := view.held_reason(job["queue"], job["tenant"])) is None else [q])
    code, message = _policy(policies)
    if start is not None and code in ("", "Resources"):
        return Wait("Resources", _said("Resources", message), start)
    if code and not (code == "Resources" and job_id in view.behind):
        return Wait(code, _said(code, message), start)
    return Wait("Priority", CODES["Priority"])


def wait_view(job: Mapping[str, Any], view: SchedulerView, now: float) -> dict[str, Any] | None:
    """``wait_of`` as the API sends it with a job (``wait``: a listing's items, a job's detail, a watch's puts)."""
    found = wait_of(job, view, now)
    return None if found is None else found.view()
