"""One source of a run's start and end (issue 36: ``fedq job`` said started 15:44:44 while its
Admitted->Running event said 15:44:45): the agent's time for the move, on our clock and within the run's
life as we saw it, is both the record's ``start_time``/``end_time`` and the history entry's time.

Hand-worked: dispatched at 100; one report arriving at 103 says Admitted at 101 and Running at 101.5,
a later one arriving at 110 says Succeeded at 109. Start 101.5 and end 109, in the record and in its
Admitted->Running and Running->Succeeded entries; the history stays in time order (101 <= 101.5).
A Running time before the history's last entry (a report from a clock still off) is taken at that entry.
"""

from __future__ import annotations

from federation.lifecycle import AgentUpdate, Dispatch, JobState, submitted, transition
from federation.models import JobRecord, JobSpecBody


def new_job(job_id: str) -> JobRecord:
    spec = JobSpecBody.model_validate({"queue": "q", "tasks": [{"resources": {"cpu": 2}}]})
    return JobRecord(id=job_id, name=job_id, tenant="t", queue="q", spec=spec, submit_time=0.0, events=[submitted(0.0)])


def moved(record: JobRecord, event: AgentUpdate | Dispatch, now: float) -> JobRecord:
    outcome = transition(record, event, now)
    assert outcome is not None
    return outcome.record


def test_the_run_starts_and_ends_when_its_history_says() -> None:
    job = moved(new_job("j"), Dispatch("east"), 100.0)
    job = moved(job, AgentUpdate("east", 1, JobState.ADMITTED, 101.0), 103.0)
    job = moved(job, AgentUpdate("east", 1, JobState.RUNNING, 101.5), 103.0)
    running = job.events[-1]
    print(f"start_time {job.start_time}, Admitted->Running entry at {running.time}")
    assert (running.source, running.target) == (JobState.ADMITTED, JobState.RUNNING)
    assert job.start_time == running.time == 101.5, (job.start_time, running.time)
    job = moved(job, AgentUpdate("east", 1, JobState.SUCCEEDED, 109.0), 110.0)
    print(f"end_time {job.end_time}, Running->Succeeded entry at {job.events[-1].time}")
    assert job.end_time == job.events[-1].time == 109.0
    times = [event.time for event in job.events]
    assert times == sorted(times), times


def test_a_start_reported_before_the_last_entry_is_taken_at_it() -> None:
    job = moved(new_job("j"), Dispatch("east"), 100.0)
    job = moved(job, AgentUpdate("east", 1, JobState.ADMITTED, 102.0), 102.5)
    job = moved(job, AgentUpdate("east", 1, JobState.RUNNING, 101.0), 103.0)
    assert job.start_time == job.events[-1].time == 102.0, (job.start_time, job.events[-1].time)
