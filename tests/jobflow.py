"""Moving a stored job through the lifecycle in tests, one legal event at a time, as the scheduler and
a cluster's agent would."""

from __future__ import annotations

from typing import Any

from federation.jobs import JobRepository, StoredJob
from federation.lifecycle import AgentUpdate, Dispatch, Event
from federation.models import JobState


async def move(jobs: JobRepository, job_id: str, event: Event, now: float) -> StoredJob:
    return await jobs.apply(await jobs.get(job_id), event, now=now)


async def dispatch(jobs: JobRepository, job_id: str, cluster: str, now: float) -> int:
    """Pending -> Dispatched to ``cluster`` (with its assignment); returns the new epoch."""
    return (await move(jobs, job_id, Dispatch(cluster), now)).record.epoch


async def report(jobs: JobRepository, job_id: str, state: JobState, now: float, **fields: Any) -> StoredJob:
    """What the job's cluster reports of its current run (``fields``: time, reason, exit_code ...)."""
    stored = await jobs.get(job_id)
    record = stored.record
    fields.setdefault("time", now)
    return await jobs.apply(stored, AgentUpdate(record.cluster, record.epoch, state, **fields), now=now)


async def advance(jobs: JobRepository, job_id: str, target: JobState, now: float, cluster: str = "c1") -> StoredJob:
    """A queued job taken to ``target`` (Dispatched, Running or an end) the way it gets there."""
    stored = await move(jobs, job_id, Dispatch(cluster), now)
    if target is JobState.DISPATCHED:
        return stored
    if target is not JobState.RUNNING:
        await report(jobs, job_id, JobState.RUNNING, now)
    return await report(jobs, job_id, target, now)
