"""The dependency index inside ``FederationState``: a waiting job is out of the pending index until
the jobs it waits on end as its condition asks; one that can never run is listed as unmet."""

from __future__ import annotations

import pytest

from federation.dependencies import Tally, Verdict, verdict
from federation.models import JobRecord, JobState
from federation.models.dependency import Wait, WaitCondition
from federation.scheduler.state import WAITING, FederationState
from tests.unit.records import job_record

S, F, C = JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED


def _waiting(job_id: str, *waits: Wait) -> JobRecord:
    return job_record(job_id, [1.0], JobState.PENDING).model_copy(update={"after": list(waits)})


def _end(state: FederationState, job_id: str, how: JobState, revision: int) -> None:
    state.upsert_job(job_record(job_id, [1.0], how, end_time=5.0), revision, b"")


@pytest.mark.parametrize(
    ("condition", "ends", "expected"),
    [
        ("afterok", [S, S], Verdict.MET),
        ("afterok", [S, None], Verdict.WAIT),
        ("afterok", [F, None], Verdict.NEVER),  # known before the other ends
        ("afternotok", [S, F], Verdict.MET),  # at least one failed, all ended
        ("afternotok", [C, None], Verdict.WAIT),  # wait for the rest of the array
        ("afternotok", [S, S], Verdict.NEVER),
        ("afterany", [S, F], Verdict.MET),
        ("afterany", [C, None], Verdict.WAIT),
    ],
)
def test_the_rule(condition: WaitCondition, ends: list[JobState | None], expected: Verdict) -> None:
    tally = Tally(len(ends))
    for end in ends:
        if end is not None:
            tally.ended(end)
    assert verdict(condition, tally) is expected


def test_a_chain_is_freed_link_by_link() -> None:
    state = FederationState()
    state.upsert_job(job_record("a", [1.0], JobState.PENDING), 1, b"")
    state.upsert_job(_waiting("b", Wait(job="a")), 2, b"")
    state.upsert_job(_waiting("c", Wait(job="b")), 3, b"")
    assert {j.id for j in state.pending.jobs()} == {"a"}
    assert state.blocked == {"b": {WAITING}, "c": {WAITING}}
    _end(state, "a", S, 4)
    assert {j.id for j in state.pending.jobs()} == {"b"}
    _end(state, "b", S, 5)
    assert {j.id for j in state.pending.jobs()} == {"c"}
    assert state.dependencies.take_unmet() == []


def test_a_failed_dependency_makes_the_dependant_unmet_and_it_stays_out() -> None:
    state = FederationState()
    state.upsert_job(job_record("a", [1.0], JobState.PENDING), 1, b"")
    state.upsert_job(_waiting("ok", Wait(job="a")), 2, b"")
    state.upsert_job(_waiting("cleanup", Wait(job="a", condition="afternotok")), 3, b"")
    _end(state, "a", F, 4)
    assert {j.id for j in state.pending.jobs()} == {"cleanup"}
    assert state.dependencies.take_unmet() == [("ok", "dependency never satisfied: afterok on job a, and a is Failed")]
    assert state.dependencies.take_unmet() == []  # once, until a new version of its record arrives
    state.upsert_job(_waiting("ok", Wait(job="a")).model_copy(update={"reason": "x"}), 5, b"")
    assert [job for job, _ in state.dependencies.take_unmet()] == ["ok"]
    assert "ok" not in state.pending


def test_an_array_dependency_waits_for_every_element() -> None:
    state = FederationState()
    for index in range(3):
        state.upsert_job(job_record(f"arr-{index}", [1.0], JobState.PENDING), 1 + index, b"")
    state.upsert_job(_waiting("after", Wait(job="arr", count=3)), 10, b"")
    _end(state, "arr-2", S, 11)
    _end(state, "arr-0", S, 12)
    assert "after" not in state.pending
    _end(state, "arr-1", S, 13)
    assert "after" in state.pending


def test_a_job_submitted_after_its_dependency_ended_is_judged_at_once() -> None:
    state = FederationState()
    _end(state, "done", S, 1)
    _end(state, "broke", F, 2)
    state.upsert_job(_waiting("free", Wait(job="done")), 3, b"")
    state.upsert_job(_waiting("doomed", Wait(job="broke")), 4, b"")
    assert {j.id for j in state.pending.jobs()} == {"free"}
    assert [job for job, _ in state.dependencies.take_unmet()] == ["doomed"]


def test_after_a_load_a_dependency_on_a_job_no_longer_stored_is_met() -> None:
    state = FederationState()
    state.upsert_job(_waiting("late", Wait(job="purged"), Wait(job="live")), 1, b"")
    state.upsert_job(job_record("live", [1.0], JobState.RUNNING, cluster="c"), 2, b"")
    state.settle()
    assert "late" not in state.pending
    _end(state, "live", S, 3)
    assert "late" in state.pending


def test_a_cancelled_dependant_leaves_the_index() -> None:
    state = FederationState()
    state.upsert_job(job_record("a", [1.0], JobState.PENDING), 1, b"")
    state.upsert_job(_waiting("b", Wait(job="a")), 2, b"")
    _end(state, "b", C, 3)
    assert len(state.dependencies) == 0
    _end(state, "a", S, 4)
    assert "b" not in state.pending and "b" not in state.entries
