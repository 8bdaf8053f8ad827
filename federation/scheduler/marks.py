"""The visible reasons waiting jobs carry after a cycle: Reserved (where and from when), Unschedulable
(why no cluster ever could), or back to plain Pending. The service writes them; the simulator applies
the same marks to its records, so both histories read alike."""

from __future__ import annotations

from federation.lifecycle import Mark
from federation.models import JobState
from federation.scheduler.cycle import CyclePlan
from federation.scheduler.state import FederationState
from policies.format import format_time


def marks(plan: CyclePlan, state: FederationState) -> list[tuple[str, Mark]]:
    """Marks for the jobs the plan names or that carry one; a job dispatched by the plan gets none."""
    dispatched = {job for job, _ in plan.dispatches}
    out: list[tuple[str, Mark]] = []
    for job_id in sorted(set(plan.unschedulable) | set(plan.reservations) | state.marked):
        entry = state.entries.get(job_id)
        if entry is None or not entry.state.queued or job_id in dispatched:
            continue
        if job_id in plan.unschedulable:
            out.append((job_id, Mark(JobState.UNSCHEDULABLE, plan.unschedulable[job_id])))
        elif job_id in plan.reservations:
            reservation = plan.reservations[job_id]
            where = ", ".join(sorted(reservation.nodes))
            out.append((job_id, Mark(JobState.RESERVED, f"reserved on {where} from {format_time(reservation.start)}")))
        else:
            out.append((job_id, Mark(JobState.PENDING, "waiting")))
    return out
