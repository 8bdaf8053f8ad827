"""The lifecycle's promises under random event sequences (a hypothesis state machine), and worked cases.

A few jobs on two clusters take any event at any time: dispatch, marks, reclaim, cancel, hold,
release, requeue, a lost cluster, a cluster's admission timeout, and agent reports of any state, for
the current run or a stale one, in any order. After every step: each move is a row of ``MOVES``;
epochs only grow; no epoch runs twice; every usage start has one stop and a job off its cluster holds
none; terminal states are final but for a requeue; a held job waits Pending (or ends); a requested
cancel ends Cancelled (or Succeeded, when the run had already finished); a takeover that rebuilds
the accounting from the record history (``usage`` on each version, as the feed does) finds the live
accounting.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from federation.lifecycle import (
    MOVES,
    ON_CLUSTER,
    TERMINAL_STATES,
    AgentUpdate,
    Cancel,
    ClusterLost,
    Dispatch,
    Event,
    Hold,
    IllegalTransition,
    JobState,
    Mark,
    NotAdmitted,
    Reclaim,
    Release,
    Requeue,
    RetryPolicy,
    RunStarted,
    RunStopped,
    StopOrder,
    submitted,
    transition,
    usage,
)
from federation.models import JobRecord, JobSpecBody

CLUSTERS = ("east", "west")
REPORTABLE = (
    JobState.ADMITTED,
    JobState.RUNNING,
    JobState.SUCCEEDED,
    JobState.FAILED,
    JobState.CANCELLED,
    JobState.PENDING,
)
RETRY = RetryPolicy(2, lambda n: 10.0 * n)


def new_job(job_id: str, now: float = 0.0) -> JobRecord:
    spec = JobSpecBody.model_validate({"queue": "q", "tasks": [{"resources": {"cpu": 2}}]})
    return JobRecord(id=job_id, name=job_id, tenant="t", queue="q", spec=spec, submit_time=now, events=[submitted(now)])


def legal(old: JobState, new: JobState) -> bool:
    return any(old in move.sources and new in move.targets for move in MOVES.values())


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.jobs = {f"j{i}": new_job(f"j{i}") for i in range(3)}
        self.history: dict[str, list[JobRecord]] = {j: [r] for j, r in self.jobs.items()}
        self.open: dict[str, float] = {}  # job -> start of the run the live accounting holds
        self.ran_epochs: dict[str, set[int]] = {j: set() for j in self.jobs}
        self.cancel_asked: set[str] = set()
        self.ended: dict[str, JobState] = {}

    def apply(self, job_id: str, event: Event) -> None:
        old = self.jobs[job_id]
        try:
            outcome = transition(old, event, self.now)
        except IllegalTransition:
            return
        if outcome is None:
            return
        new = outcome.record
        assert old.state not in TERMINAL_STATES or isinstance(event, Requeue), "a terminal state moved"
        assert old.state == new.state or legal(old.state, new.state), (old.state, new.state, event)
        assert new.epoch >= old.epoch
        assert new.events[: len(old.events)] == old.events and len(new.events) == len(old.events) + 1
        for effect in outcome.effects:
            if isinstance(effect, RunStarted):
                assert job_id not in self.open, "a run started twice"
                assert new.epoch not in self.ran_epochs[job_id], "two runs under one epoch"
                self.ran_epochs[job_id].add(new.epoch)
                self.open[job_id] = effect.at
            elif isinstance(effect, RunStopped):
                assert self.open.pop(job_id, None) is not None, "a stop without a start"
                assert effect.at <= self.now, "usage stopped in the future"
            elif isinstance(effect, StopOrder):
                assert effect.epoch == new.epoch and effect.cluster == new.cluster
        if new.cancel_requested:
            self.cancel_asked.add(job_id)
        if new.state in TERMINAL_STATES:
            self.ended[job_id] = new.state
        elif old.state in TERMINAL_STATES:  # requeued: a new life, its cancel (if any) done with
            del self.ended[job_id]
            self.cancel_asked.discard(job_id)
        self.jobs[job_id] = new
        self.history[job_id].append(new)

    @rule(dt=st.floats(0, 100))
    def tick(self, dt: float) -> None:
        self.now += dt

    @rule(job=st.sampled_from(["j0", "j1", "j2"]), cluster=st.sampled_from(CLUSTERS))
    def dispatch(self, job: str, cluster: str) -> None:
        self.apply(job, Dispatch(cluster))

    @rule(job=st.sampled_from(["j0", "j1", "j2"]), state=st.sampled_from(sorted(JobState)))
    def mark(self, job: str, state: JobState) -> None:
        self.apply(job, Mark(state, "why"))

    @rule(job=st.sampled_from(["j0", "j1", "j2"]))
    def reclaim(self, job: str) -> None:
        self.apply(job, Reclaim("fair share"))

    @rule(job=st.sampled_from(["j0", "j1", "j2"]))
    def cancel(self, job: str) -> None:
        self.apply(job, Cancel("alice"))

    @rule(job=st.sampled_from(["j0", "j1", "j2"]), event=st.sampled_from([Hold("bob"), Release("bob"), Requeue("bob")]))
    def asked(self, job: str, event: Event) -> None:
        self.apply(job, event)

    @rule(job=st.sampled_from(["j0", "j1", "j2"]), cluster=st.sampled_from(CLUSTERS))
    def cluster_lost(self, job: str, cluster: str) -> None:
        self.apply(job, ClusterLost(cluster))

    @rule(job=st.sampled_from(["j0", "j1", "j2"]), cluster=st.sampled_from(CLUSTERS))
    def not_admitted(self, job: str, cluster: str) -> None:
        self.apply(job, NotAdmitted(cluster, 300.0))

    @rule(
        job=st.sampled_from(["j0", "j1", "j2"]),
        state=st.sampled_from(REPORTABLE),
        current=st.booleans(),
        cluster=st.sampled_from(CLUSTERS),
        back=st.floats(0, 50),
        final=st.booleans(),
    )
    def agent(self, job: str, state: JobState, current: bool, cluster: str, back: float, final: bool) -> None:
        """A report from the job's cluster of its current run, or from anywhere of an older epoch; its
        time may lag the federation's."""
        record = self.jobs[job]
        epoch = record.epoch if current else max(0, record.epoch - 1)
        where = record.cluster if current and record.cluster else cluster
        self.apply(job, AgentUpdate(where, epoch, state, self.now - back, "", None, "", RETRY, final))

    @invariant()
    def off_its_cluster_a_job_holds_no_run(self) -> None:
        for job_id, record in self.jobs.items():
            if record.state not in ON_CLUSTER:
                assert job_id not in self.open
                if record.state is not JobState.SUCCEEDED and record.state not in TERMINAL_STATES:
                    assert record.cluster == "" and record.start_time is None

    @invariant()
    def a_requested_cancel_is_never_lost(self) -> None:
        for job_id in self.cancel_asked:
            state = self.jobs[job_id].state
            assert state in ON_CLUSTER or state in (JobState.CANCELLED, JobState.SUCCEEDED), state

    @invariant()
    def a_held_job_waits_pending(self) -> None:
        for record in self.jobs.values():
            waits = record.state is JobState.PENDING or record.state in TERMINAL_STATES  # (cancelled while held)
            assert record.held_by is None or waits, record.state

    @invariant()
    def terminal_states_stay(self) -> None:
        for job_id, state in self.ended.items():
            assert self.jobs[job_id].state is state

    @invariant()
    def a_takeover_counts_what_the_live_accounting_holds(self) -> None:
        for job_id, versions in self.history.items():
            held: float | None = None
            for record in versions:  # the feed's rule on each version, in order
                change = usage(record)
                if isinstance(change, RunStarted):
                    held = change.at if held is None else held
                elif isinstance(change, RunStopped):
                    held = None
            assert held == self.open.get(job_id)


TestLifecycle = Lifecycle.TestCase
TestLifecycle.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# ---- worked cases ----------------------------------------------------------------------------------


def run(record: JobRecord, *events: Event, now: float = 100.0) -> JobRecord:
    for event in events:
        outcome = transition(record, event, now)
        assert outcome is not None, event
        record = outcome.record
    return record


def on_east(state: JobState, **fields: object) -> AgentUpdate:
    return AgentUpdate("east", 1, state, 50.0, retry=RETRY, **fields)  # type: ignore[arg-type]


def test_a_cancel_asked_before_the_cluster_is_lost_ends_cancelled() -> None:
    """Issue 22: the requeue once cleared the cancel and the job ran again to Succeeded."""
    job = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING), Cancel("alice"), ClusterLost("east"))
    assert (job.state, job.cluster, job.attempt) == (JobState.CANCELLED, "east", 0)  # where it last ran
    assert [e.reason for e in job.events][-2:] == [
        "cancel requested by alice",
        "cancelled: cluster east was lost before it confirmed the cancel",
    ]


def test_reclaim_requeues_and_counts_a_preemption_while_a_cancel_wins() -> None:
    preempted = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING), Reclaim("fair share"))
    assert preempted.evicting and not preempted.cancel_requested and preempted.state is JobState.RUNNING
    requeued = run(preempted, on_east(JobState.CANCELLED, reason="preempted: fair share"))
    assert (requeued.state, requeued.preemptions, requeued.attempt, requeued.evicting) == (
        JobState.PENDING,
        1,
        1,
        False,
    )
    cancelled = run(preempted, Cancel("alice"), on_east(JobState.CANCELLED))
    assert (cancelled.state, cancelled.preemptions) == (JobState.CANCELLED, 0)


def test_a_failed_run_is_retried_with_backoff_then_fails_but_a_walltime_overrun_is_not() -> None:
    job = run(new_job("j"), Dispatch("east"), on_east(JobState.RUNNING), on_east(JobState.FAILED, reason="exit 3"))
    # RETRY: at most 2, the n-th after 10 n seconds: back to Pending until 100 + 10.
    assert (job.state, job.retries, job.retry_at, job.attempt) == (JobState.PENDING, 1, 110.0, 1)
    assert job.events[-1].reason == "failed on east: exit 3; retry 1 of 2 in 10s"
    again = run(job, Dispatch("east"), AgentUpdate("east", 2, JobState.FAILED, 60.0, "exit 3", retry=RETRY))
    assert (again.retries, again.retry_at) == (2, 120.0)
    last = run(again, Dispatch("east"), AgentUpdate("east", 3, JobState.FAILED, 70.0, "exit 3", retry=RETRY))
    assert (last.state, last.reason) == (JobState.FAILED, "exit 3 (after 2 retries)")
    overrun = run(new_job("k"), Dispatch("east"), on_east(JobState.FAILED, reason="walltime", final=True))
    assert (overrun.state, overrun.retries) == (JobState.FAILED, 0)


def test_a_stale_report_is_refused_with_where_the_job_is_now() -> None:
    job = run(new_job("j"), Dispatch("east"), ClusterLost("east"), Dispatch("west"))
    with pytest.raises(IllegalTransition, match="job is now epoch 2 on west"):
        transition(job, on_east(JobState.SUCCEEDED), 100.0)


def test_illegal_moves_name_the_state() -> None:
    with pytest.raises(IllegalTransition, match="job is Pending: no reclaim from there"):
        transition(new_job("j"), Reclaim("x"), 1.0)
    done = run(new_job("j"), Cancel("alice"))
    with pytest.raises(IllegalTransition, match="already Cancelled"):
        transition(done, Cancel("bob"), 1.0)


def test_a_job_not_admitted_in_time_goes_back_to_the_queue_and_its_old_run_is_fenced() -> None:
    job = run(new_job("j"), Dispatch("east"), NotAdmitted("east", 300.0))
    assert (job.state, job.cluster, job.attempt, job.retries) == (JobState.PENDING, "", 1, 0)
    with pytest.raises(IllegalTransition):  # the cluster admits it late: too late, that run is stale
        transition(job, on_east(JobState.ADMITTED), 200.0)
    running = run(new_job("k"), Dispatch("east"), on_east(JobState.ADMITTED))
    with pytest.raises(IllegalTransition):  # admitted in time: no timeout
        transition(running, NotAdmitted("east", 300.0), 200.0)
