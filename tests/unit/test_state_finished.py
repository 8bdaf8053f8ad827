"""FederationState's record of finished jobs still in the store, which the leader deletes past retention.

A property checks it against a plain model through random ends, deletions (the leader's, seen by every
replica) and sweeps; another that a replica that never sweeps (a stand-by) keeps it bounded by the
finished jobs still in the store, not by every job that ever finished.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.models import JobRecord, JobState
from federation.scheduler.state import FederationState
from tests.unit.records import job_record


def finished(job_id: str, ended: float) -> JobRecord:
    return job_record(job_id, [1.0], JobState.SUCCEEDED, end_time=ended)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("end"), st.integers(0, 30), st.integers(0, 100)),
        st.tuples(st.just("delete"), st.integers(0, 30), st.just(0)),
        st.tuples(st.just("sweep"), st.just(0), st.integers(0, 120)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_sweeps_name_each_kept_job_that_ended_before_the_cutoff_once(ops: list[tuple[str, int, int]]) -> None:
    state = FederationState()
    kept: dict[str, float] = {}  # the model: finished jobs in the store, and when they ended
    swept: set[str] = set()
    revision = 0
    for op, job, time in ops:
        job_id = f"j{job}"
        revision += 1
        if op == "end" and job_id not in kept:
            state.upsert_job(finished(job_id, float(time)), revision, b"")
            kept[job_id] = float(time)
        elif op == "delete":
            state.remove_job(job_id)
            kept.pop(job_id, None)
            swept.discard(job_id)
        elif op == "sweep":
            due = {job_id for job_id, *_ in state.finished_before(float(time))}
            assert due == {j for j, ended in kept.items() if ended < time and j not in swept}
            swept |= due
        assert state.finished.keys() == kept.keys()


def test_a_replica_that_never_sweeps_stays_bounded_by_the_jobs_in_the_store() -> None:
    state = FederationState()
    for i in range(10_000):
        state.upsert_job(finished(f"j{i}", float(i)), i + 1, b"")
        if i >= 10:
            state.remove_job(f"j{i - 10}")  # the leader deletes what is past retention; every replica sees it
    assert len(state.finished) == 10
    assert len(state._finished_by_end) <= 2 * 10 + 64
    assert [job for job, *_ in state.finished_before(float("inf"))] == [f"j{i}" for i in range(9990, 10_000)]


def test_an_entry_left_from_before_a_deletion_does_not_make_a_later_end_due_early() -> None:
    state = FederationState()
    state.upsert_job(finished("j1", 50.0), 1, b"")
    state.remove_job("j1")
    state.upsert_job(finished("j1", 100.0), 2, b"")  # the same id, finished again (a store restored from backup)
    assert state.finished_before(60.0) == []
    assert state.finished_before(101.0) == [("j1", 2, "Succeeded", "q", "t")]
