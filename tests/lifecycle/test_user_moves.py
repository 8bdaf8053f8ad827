"""Worked cases of the moves people ask for after submitting: hold, release, requeue, update."""

from __future__ import annotations

import pytest

from federation.lifecycle import (
    AgentUpdate,
    Cancel,
    Dispatch,
    Hold,
    IllegalTransition,
    JobState,
    Mark,
    Release,
    Requeue,
    StopOrder,
    Update,
    transition,
)
from tests.lifecycle.test_machine import new_job, on_east, run


def test_a_hold_keeps_a_queued_job_pending_and_out_of_dispatch_until_released() -> None:
    reserved = run(new_job("j"), Mark(JobState.RESERVED, "reserved on east"))
    held = run(reserved, Hold("tenant/alice"), now=100.0)
    assert (held.state, held.held_by, held.held_at, held.reason) == (
        JobState.PENDING,
        "tenant/alice",
        100.0,
        "held by tenant/alice",
    )
    assert transition(held, Hold("admin/root"), 101.0) is None  # already held: the first hold stands
    with pytest.raises(IllegalTransition, match="held by tenant/alice: release it first"):
        transition(held, Dispatch("east"), 101.0)
    with pytest.raises(IllegalTransition, match="held by tenant/alice"):
        transition(held, Mark(JobState.RESERVED, "reserved on east"), 101.0)
    released = run(held, Release("admin/root"), now=102.0)
    assert (released.state, released.held_by, released.reason) == (JobState.PENDING, None, "released by admin/root")
    assert transition(released, Release("admin/root"), 103.0) is None  # not held: nothing to do
    assert run(released, Dispatch("east")).state is JobState.DISPATCHED


def test_a_running_job_cannot_be_held() -> None:
    running = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING))
    with pytest.raises(IllegalTransition, match="job is Running: no hold from there"):
        transition(running, Hold("alice"), 1.0)


def test_a_requeued_run_is_stopped_by_its_agent_then_waits_again_not_as_a_retry() -> None:
    running = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING))
    outcome = transition(running, Requeue("alice"), 100.0)
    assert outcome is not None
    asked = outcome.record
    assert (asked.state, asked.requeue_requested) == (JobState.RUNNING, True)
    assert outcome.effects == (StopOrder("east", 1, "requeued by alice", requeue=True),)
    assert transition(asked, Requeue("alice"), 101.0) is None  # once is enough
    back = run(asked, on_east(JobState.CANCELLED, reason="killed"))
    assert (back.state, back.attempt, back.retries, back.preemptions, back.requeue_requested, back.cluster) == (
        JobState.PENDING,
        1,
        0,
        0,
        False,
        "",
    )
    assert back.events[-1].reason == "requeued as requested (killed)"
    again = run(back, Dispatch("east"))
    assert again.epoch == 2  # the next run is fenced from the old one
    with pytest.raises(IllegalTransition):  # a late report of the old run
        transition(again, on_east(JobState.SUCCEEDED), 102.0)


def test_a_cancel_wins_over_a_requeue_and_a_requeue_is_refused_once_cancel_is_asked() -> None:
    asked = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING), Requeue("alice"), Cancel("bob"))
    assert run(asked, on_east(JobState.CANCELLED)).state is JobState.CANCELLED
    cancelling = run(new_job("k"), Dispatch("east"), on_east(JobState.RUNNING), Cancel("bob"))
    with pytest.raises(IllegalTransition, match="a cancel was asked"):
        transition(cancelling, Requeue("alice"), 1.0)


def test_a_failed_or_cancelled_job_is_requeued_with_its_retries_kept_but_a_succeeded_one_is_not() -> None:
    failed = run(
        new_job("j"),
        Dispatch("east"),
        AgentUpdate("east", 1, JobState.FAILED, 50.0, "exit 3"),  # no retries allowed: it ends Failed
    )
    assert failed.state is JobState.FAILED
    again = run(failed, Requeue("alice"), now=200.0)
    assert (again.state, again.attempt, again.retries, again.end_time, again.reason) == (
        JobState.PENDING,
        1,
        0,
        None,
        "requeued by alice",
    )
    cancelled = run(new_job("k"), Hold("alice"), Cancel("alice"))
    fresh = run(cancelled, Requeue("alice"))
    assert (fresh.state, fresh.cancel_requested, fresh.held_by) == (JobState.PENDING, False, None)
    succeeded = run(new_job("s"), Dispatch("east"), on_east(JobState.SUCCEEDED))
    with pytest.raises(IllegalTransition, match="job is Succeeded: no requeue from there"):
        transition(succeeded, Requeue("alice"), 1.0)
    with pytest.raises(IllegalTransition, match="job is Pending: no requeue"):
        transition(new_job("p"), Requeue("alice"), 1.0)


def test_an_update_changes_the_spec_and_names_each_change_in_the_history() -> None:
    job = new_job("j")
    spec = job.spec.model_copy(update={"priority": 10, "queue": "other", "walltime": 3600.0})
    updated = run(job, Update("tenant/alice", spec))
    assert (updated.priority, updated.queue, updated.spec.walltime, updated.state) == (
        10,
        "other",
        3600.0,
        JobState.PENDING,
    )
    assert updated.reason == "updated by tenant/alice: priority 0 -> 10, queue q -> other, walltime none -> 1h"
    assert transition(updated, Update("tenant/alice", spec), 1.0) is None  # the same values: no change
    running = run(new_job("k"), Dispatch("east"))
    with pytest.raises(IllegalTransition, match="job is Dispatched: no update from there"):
        transition(running, Update("alice", spec), 1.0)
