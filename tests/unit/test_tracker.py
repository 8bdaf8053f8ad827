"""The agent's job tracker: what it keeps per job (phase counts, running entries) matches a recount."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from federation.models import JobSpecBody, TaskSpec
from member_agent.backends.base import TaskPhase, TaskReport
from member_agent.tracker import JobTracker, LocalJob
from policies.clock import ManualClock


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(list(TaskPhase))), max_size=30))
def test_phase_counts_are_those_of_the_latest_status_of_each_task(reports: list[tuple[int, TaskPhase]]) -> None:
    job = LocalJob("j", 1)
    for index, phase in reports:
        job.record(TaskReport("j", "main", index, 1, phase))
    assert +job.phases == Counter(status.phase for status in job.tasks.values())


@given(st.lists(st.tuples(st.integers(0, 4), st.none() | st.integers(0, 9)), max_size=30))
def test_a_jobs_start_is_the_earliest_start_of_the_latest_status_of_each_task(
    reports: list[tuple[int, int | None]],
) -> None:
    """Kept as statuses arrive, also when a task's start changes or goes: the same as a recount."""
    job = LocalJob("j", 1)
    for index, started in reports:
        job.record(TaskReport("j", "main", index, 1, TaskPhase.RUNNING, started_at=started))
        starts = [status.started_at for status in job.tasks.values() if status.started_at is not None]
        assert job.started_at == (min(starts) if starts else None)


@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.none() | st.integers(0, 9)))))
def test_running_jobs_reported_are_those_a_fresh_tracker_reports(
    reports: list[list[tuple[str, int, int | None]]],
) -> None:
    tracker = JobTracker(ManualClock(0.0))
    spec = JobSpecBody(queue="q", walltime=60, tasks=[TaskSpec(replicas=3, resources={"cpu": 1.0})])
    tracker.jobs = {job: LocalJob(job, 1, spec=spec, launched=True) for job in ("a", "b")}
    for cycle in reports:
        for job, index, started in cycle:
            tracker.jobs[job].record(TaskReport(job, "main", index, 1, TaskPhase.RUNNING, started_at=started))
        fresh = JobTracker(ManualClock(0.0))
        fresh.jobs = tracker.jobs
        assert tracker.running() == fresh.running()
