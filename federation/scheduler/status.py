"""What the leader publishes for ``fedq explain`` and every job's reason to wait (``federation.waits``)
after each cycle (``status/scheduler``): the reasons jobs wait, reservations, the line of waiting jobs as
the cycle took them up, the jobs waiting on dependencies, the arrays their throttle holds back, the
cycle's time; and,
while its cycles keep failing, that they do (``failing``), beside what the last good cycle published.

Any API replica answers explain from it. Only the first ``MAX_PUBLISHED_JOBS`` of each list are kept,
fewer if that would not fit one txn, so a deep backlog does not make the status a large write every
cycle, nor one etcd refuses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from typing import Any

from federation.scheduler.cycle import CyclePlan
from federation.scheduler.state import FederationState
from federation.store.bulk import MAX_BATCH_BYTES

MAX_PUBLISHED_JOBS = 2000  # per-job entries in the published status: reasons, and the line
_TIME_BYTES = 64  # the time the body adds to the compared fields


@dataclass(frozen=True, slots=True)
class Status:
    fields: dict[str, Any]
    compared: bytes  # the status without its time: written again only when this changes

    def body(self, now: float) -> bytes:
        return json.dumps({"time": now, **self.fields}).encode()


def status_of(plan: CyclePlan, state: FederationState) -> Status:
    """The status of ``plan``: its first ``MAX_PUBLISHED_JOBS`` of each list, fewer (halved until it
    fits) when that is over what one txn carries (``MAX_BATCH_BYTES``), so the put never fails the cycle."""
    keep = MAX_PUBLISHED_JOBS
    while True:
        fields = _fields(plan, state, keep)
        compared = json.dumps(fields, sort_keys=True).encode()
        if len(compared) <= MAX_BATCH_BYTES - _TIME_BYTES or keep == 0:
            return Status(fields, compared)
        keep //= 2


def _fields(plan: CyclePlan, state: FederationState, keep: int) -> dict[str, Any]:
    def tenant_of(job_id: str) -> str | None:
        entry = state.entries.get(job_id)
        return entry.info.tenant if entry is not None else None

    return {
        "cycle_seconds": round(plan.seconds, 4),
        "reasons": {job: [[r.code, r.source, r.message] for r in rs] for job, rs in islice(plan.reasons.items(), keep)},
        "queue_reasons": {q: [r.code, r.source, r.message] for q, r in plan.queue_reasons.items()},
        "tenant_reasons": _by_queue(plan),
        "reservations": {
            job: {"clusters": r.nodes, "start": r.start, "end": r.end, "tenant": tenant_of(job)}
            for job, r in islice(plan.reservations.items(), keep)
        },
        "unschedulable": dict(islice(plan.unschedulable.items(), keep)),
        "line": plan.line[:keep],
        "dependency": {
            job: "DependencyNeverSatisfied" if never else "Dependency"
            for job, never in islice(state.dependencies.blocked(), keep)
        },
        "dependency_all": len(state.dependencies) <= keep,
        "throttled": dict(islice(state.throttles.published().items(), keep)),
    }


def _by_queue(plan: CyclePlan) -> dict[str, dict[str, list[str]]]:
    """The tenants a cycle passed over, queue by queue (JSON keys are strings)."""
    out: dict[str, dict[str, list[str]]] = {}
    for (queue, tenant), r in plan.tenant_reasons.items():
        out.setdefault(queue, {})[tenant] = [r.code, r.source, r.message]
    return out


def failing_body(last: bytes | None, health: dict[str, Any]) -> bytes:
    """The last published status (``last``; None: none yet) with the loop's failure added, so whoever
    asks why a job waits hears that no cycle gets through."""
    return json.dumps({**(json.loads(last) if last is not None else {}), "failing": health}).encode()
