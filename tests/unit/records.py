"""Job records built directly, for tests that feed FederationState without a store."""

from __future__ import annotations

from federation.models import JobRecord, JobSpecBody, JobState, TaskSpec


def job_record(
    job_id: str,
    cpus: list[float],
    state: JobState,
    cluster: str = "",
    epoch: int = 0,
    end_time: float | None = None,
    start_time: float | None = None,
    walltime: float | None = None,
) -> JobRecord:
    """A job of one task per entry of ``cpus`` in queue ``q`` for tenant ``t``."""
    tasks = [TaskSpec(name=f"t{i}", resources={"cpu": c}) for i, c in enumerate(cpus)]
    spec = JobSpecBody(queue="q", walltime=walltime, tasks=tasks)
    return JobRecord(
        id=job_id,
        name=job_id,
        tenant="t",
        queue="q",
        spec=spec,
        submit_time=0.0,
        state=state,
        cluster=cluster,
        epoch=epoch,
        end_time=end_time,
        start_time=start_time,
    )
