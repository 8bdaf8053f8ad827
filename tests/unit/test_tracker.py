"""The agent's job tracker: what it keeps per job (phase counts, running entries) matches a recount."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from federation.models import JobRecord, JobSpecBody, JobState, TaskSpec
from federation.models.cluster import Assignment
from member_agent.backends.base import TaskPhase, TaskReport, task_id
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


def _growing_recount(tracker: JobTracker) -> bool:
    """The definition the kept set answers for: a launched job, not ended or stopped, with tasks not placed."""
    return any(
        job.launched
        and job.cancel_reason is None
        and job.state in (JobState.ADMITTED, JobState.RUNNING)
        and job.unplaced() > 0
        for job in tracker.jobs.values()
    )


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["admit", "launch", "give_back", "succeed", "cancel", "hand_back", "acknowledge", "drop"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(1, 3),
    ),
    max_size=40,
)


@given(_STEPS)
def test_growing_and_forgetting_follow_their_recount(steps: list[tuple[str, str, int]]) -> None:
    """``growing`` and ``acknowledge`` read the ids kept as jobs launch, give tasks back and end, not every
    job held: after any sequence they answer as a walk of every job would (an elastic job of 3 tasks,
    gang of 1, launched a few tasks at a time; re-admitted under a later epoch)."""
    tracker = JobTracker(ManualClock(0.0))
    spec = JobSpecBody(queue="q", walltime=60, min_available=1, tasks=[TaskSpec(replicas=3, resources={"cpu": 1.0})])
    epochs = dict.fromkeys("abc", 0)
    for step, job_id, n in steps:
        job = tracker.jobs.get(job_id)
        if step == "admit":
            epochs[job_id] += 1
            record = JobRecord(
                id=job_id, name=job_id, tenant="t", queue="q", priority=0, spec=spec, submit_time=0.0,
                state=JobState.DISPATCHED, cluster="c", epoch=epochs[job_id],
            )  # fmt: skip
            tracker.admit(Assignment.of(record))
        elif job is None:
            continue
        elif step == "launch":
            free = [("main", i) for i in range(3) if ("main", i) not in job.placed][:n]
            if free:
                tracker.mark_placed(job, free)
                for name, index in free:
                    tracker.observe(TaskReport(job_id, name, index, job.epoch, TaskPhase.RUNNING))
        elif step == "give_back" and job.placed:
            name, index = sorted(job.placed)[0]
            job.shrinking.add(task_id(job_id, name, index))
            tracker.observe(TaskReport(job_id, name, index, job.epoch, TaskPhase.KILLED))
        elif step == "succeed":
            for name, index in sorted(job.placed):
                tracker.observe(TaskReport(job_id, name, index, job.epoch, TaskPhase.SUCCEEDED))
        elif step == "cancel":
            tracker.cancel(job, "asked")
        elif step == "hand_back" and not job.launched:
            tracker.hand_back(job, "does not fit")
        elif step == "acknowledge":
            taken = min(n, len(tracker.outbox()))
            waiting = {update.job_id for update in tracker.outbox()[taken:]}
            kept = {
                held: each
                for held, each in tracker.jobs.items()
                if held in waiting or not (each.state.terminal or each.state is JobState.PENDING)
            }
            tracker.acknowledge(taken)
            assert tracker.jobs == kept
        elif step == "drop":
            tracker.drop(job_id)
        assert tracker.growing() == _growing_recount(tracker)
