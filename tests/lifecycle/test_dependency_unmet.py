"""The lifecycle's "dependency never met" move: Cancelled with the reason, or (``jobs.killInvalidDepend``
false) kept queued with it, written once."""

from __future__ import annotations

import pytest

from federation.lifecycle import DependencyUnmet, IllegalTransition, transition
from federation.models import JobState
from tests.unit.records import job_record

WHY = "dependency never satisfied: afterok on job a, and a is Failed"


def test_cancelled_with_the_reason() -> None:
    outcome = transition(job_record("b", [1.0], JobState.PENDING), DependencyUnmet(WHY), 10.0)
    assert outcome is not None
    record = outcome.record
    assert (record.state, record.reason, record.end_time) == (JobState.CANCELLED, WHY, 10.0)
    assert (record.events[-1].source, record.events[-1].target) == (JobState.PENDING, JobState.CANCELLED)


def test_kept_pending_saying_why_once() -> None:
    outcome = transition(job_record("b", [1.0], JobState.PENDING), DependencyUnmet(WHY, cancel=False), 10.0)
    assert outcome is not None
    assert (outcome.record.state, outcome.record.reason) == (JobState.PENDING, WHY)
    assert transition(outcome.record, DependencyUnmet(WHY, cancel=False), 11.0) is None


def test_not_for_a_job_that_left_the_queue() -> None:
    with pytest.raises(IllegalTransition):
        transition(job_record("b", [1.0], JobState.RUNNING, cluster="c"), DependencyUnmet(WHY), 10.0)
