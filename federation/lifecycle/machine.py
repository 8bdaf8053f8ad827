"""The job lifecycle as a pure state machine: ``transition(record, event, now) -> Outcome | None``.

Every change of a job's state anywhere (API, report handler, scheduler, simulator) is one call here;
callers only carry the outcome out (a CAS txn in production, in-memory records in the simulator).
``MOVES`` is the table of legal moves; a move outside it raises ``IllegalTransition``. Epochs grow by
one at each dispatch and fence every older run; ``attempt`` counts every return to the queue,
``retries`` only the runs that failed for the job's own reasons.

Promises kept here (and tested by a hypothesis state machine): a requested cancel is never lost (a
job whose cancel was asked ends Cancelled, whatever else its cluster reports or if the cluster is
lost); a job back in the queue holds no cluster; terminal states are final; each run's usage starts
once and stops once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from federation.lifecycle.events import (
    AgentUpdate,
    Assign,
    Cancel,
    ClusterLost,
    DependencyUnmet,
    DropStopOrder,
    Effect,
    Event,
    Hold,
    Mark,
    NotAdmitted,
    Reclaim,
    Release,
    Requeue,
    Requeued,
    RunStarted,
    RunStopped,
    StopOrder,
    Unassign,
    Update,
)
from federation.lifecycle.events import Dispatch as DispatchEvent
from federation.lifecycle.states import QUEUED_STATES, TERMINAL_STATES, JobEvent, JobState
from policies.format import format_span

if TYPE_CHECKING:
    from federation.models import JobRecord

P, R, U = JobState.PENDING, JobState.RESERVED, JobState.UNSCHEDULABLE
D, A, X = JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING
S, F, C = JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED


class IllegalTransition(ValueError):
    """The event cannot happen to the job in its state (the message says why, for its sender)."""


@dataclass(frozen=True, slots=True)
class Move:
    """One row of the lifecycle table: ``event`` takes a job in any of ``sources`` to one of
    ``targets``; ``effects`` says in words what follows."""

    event: str
    sources: frozenset[JobState]
    targets: frozenset[JobState]
    effects: str


def _row(event: str, sources: set[JobState], targets: set[JobState], effects: str) -> Move:
    return Move(event, frozenset(sources), frozenset(targets), effects)


MOVES: dict[str, Move] = {
    m.event: m
    for m in (
        _row("dispatch", {P, R, U}, {D}, "epoch + 1; assignment for the cluster's agent"),
        _row("mark", {P, R, U}, {P, R, U}, "none: a visible reason to wait"),
        _row("cancel", {P, R, U}, {C}, "none: it never reached a cluster"),
        _row("cancel (on a cluster)", {D, A, X}, {D, A, X}, "cancel requested; stop order to the agent"),
        _row("reclaim", {D, A, X}, {D, A, X}, "eviction requested; stop order (back to the queue)"),
        _row("hold", {P, R, U}, {P}, "held: keeps its place in line, never dispatched nor reserved"),
        _row("release", {P, R, U}, {P, R, U}, "hold dropped: considered again from its place in line"),
        _row("update", {P, R, U}, {P, R, U}, "priority, queue or walltime changed; its place in line follows"),
        _row("requeue (on a cluster)", {D, A, X}, {D, A, X}, "requeue requested; stop order (back to the queue)"),
        _row("requeue", {F, C}, {P}, "back to the queue: attempt + 1, not a retry"),
        _row(
            "dependency never met",
            {P, R, U},
            {C, P, R, U},
            "Cancelled with the reason; stays queued saying so if jobs.killInvalidDepend is false",
        ),
        _row("admitted", {D}, {A}, "assignment dropped"),
        _row("running", {D, A}, {X}, "assignment dropped; usage starts"),
        _row("succeeded", {D, A, X}, {S}, "orders dropped; usage stops"),
        _row(
            "failed",
            {D, A, X},
            {F, P},
            "Pending to retry after a backoff (retries + 1) up to maxRetries, unless its walltime ran out; "
            "Pending, not a retry, when a requeue was asked",
        ),
        _row(
            "cancelled",
            {D, A, X},
            {C, P},
            "Pending when reclaim (preemptions + 1) or a requeue (not a retry) asked; usage stops",
        ),
        _row("handed back", {D, A, X}, {P, C}, "Pending, not a retry; Cancelled if a cancel was asked"),
        _row("cluster lost", {D, A, X}, {P, C}, "Pending, not a retry; Cancelled if a cancel was asked"),
        _row(
            "not admitted",
            {D},
            {P, C},
            "after cluster.admitWithin: Pending, not a retry; Cancelled if a cancel was asked",
        ),
    )
}

_AGENT_EVENTS = {A: "admitted", X: "running", S: "succeeded", F: "failed", C: "cancelled", P: "handed back"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """The job's record after the event, and what its caller is to do about it."""

    record: JobRecord
    effects: tuple[Effect, ...]


def transition(record: JobRecord, event: Event, now: float) -> Outcome | None:
    """The move ``event`` makes, or None when it changes nothing (an update already applied, a cancel
    already asked). Raises ``IllegalTransition`` when the event cannot happen in the job's state."""
    if isinstance(event, AgentUpdate):
        return _agent(record, event, now)
    if isinstance(event, DispatchEvent):
        _allow("dispatch", record)
        _not_held(record)
        new = _move(record, D, now, f"dispatched to {event.cluster}", cluster=event.cluster, epoch=record.epoch + 1)
        return Outcome(new, (Assign(event.cluster),))
    if isinstance(event, Mark):
        _allow("mark", record)
        if event.target not in QUEUED_STATES:
            raise IllegalTransition(f"a mark keeps a job queued; {event.target.value} is not a queued state")
        if record.state is event.target:
            return None
        _not_held(record)
        return Outcome(_move(record, event.target, now, event.reason), ())
    if isinstance(event, Cancel):
        return _cancel(record, event, now)
    if isinstance(event, Hold | Release):
        return _hold(record, event, now)
    if isinstance(event, Requeue):
        return _requeue_asked(record, event, now)
    if isinstance(event, Update):
        return _update(record, event, now)
    if isinstance(event, DependencyUnmet):
        _allow("dependency never met", record)
        if event.cancel:
            return Outcome(_move(record, C, now, event.reason, end_time=now), ())
        return None if record.reason == event.reason else Outcome(_move(record, record.state, now, event.reason), ())
    if isinstance(event, Reclaim):
        _allow("reclaim", record)
        if record.evicting or record.cancel_requested or record.requeue_requested:
            return None  # already being stopped
        reason = f"preempted: {event.reason}"
        new = _move(record, record.state, now, reason, evicting=True)
        return Outcome(new, (StopOrder(record.cluster, record.epoch, reason, requeue=True),))
    if isinstance(event, ClusterLost):
        _allow("cluster lost", record)
        if record.cluster != event.cluster:
            raise IllegalTransition(f"job runs on {record.cluster or 'no cluster'}, not on {event.cluster}")
        cancelled = f"cancelled: cluster {event.cluster} was lost before it confirmed the cancel"
        return _written_off(record, now, cancelled, f"requeued: cluster {event.cluster} lost", "lost")
    if isinstance(event, NotAdmitted):
        return _not_admitted(record, event, now)
    raise TypeError(f"not a lifecycle event: {event!r}")


def submitted(now: float) -> JobEvent:
    """The first entry of every job's history: it enters the queue Pending."""
    return JobEvent(time=now, source=None, target=P, reason="submitted")


def usage(record: JobRecord) -> RunStarted | RunStopped | None:
    """What a record says of its usage: a run from its start while Running, let go once it is queued
    again or has ended. The one rule the accounting follows, live or replayed from the store."""
    if record.state is X and record.start_time is not None:
        resources = record.spec.total_resources()
        return RunStarted(record.id, record.tenant, record.queue, record.cluster, resources, record.start_time)
    if record.state in TERMINAL_STATES or record.state in QUEUED_STATES:
        return RunStopped(record.id, record.released_at())
    return None


# ---- the moves -----------------------------------------------------------------------------------


def _allow(event: str, record: JobRecord) -> None:
    if record.state not in MOVES[event].sources:
        raise IllegalTransition(f"job is {record.state.value}: no {event} from there")


def _move(
    record: JobRecord, target: JobState, now: float, reason: str, *, at: float | None = None, **changes: Any
) -> JobRecord:
    """The record in ``target`` with its history entry appended (the only place a state is set); the
    entry's time is ``at`` when the move happened before it was heard of (a run's start or end)."""
    new = record.model_copy(update={"state": target, "reason": reason, **changes})
    time = now if at is None else at
    entry = JobEvent(time=time, source=record.state, target=target, reason=reason, cluster=new.cluster, epoch=new.epoch)
    new.events = [*record.events, entry]
    return new


def _requeue(record: JobRecord, now: float, reason: str, **changes: Any) -> JobRecord:
    """Back to the global queue: no cluster, not started, attempt + 1 (the next dispatch's epoch
    fences whatever the old run still does)."""
    changes.setdefault("attempt", record.attempt + 1)
    cleared = {"cluster": "", "start_time": None, "evicting": False, "requeue_requested": False}
    return _move(record, P, now, reason, **(cleared | changes))


def _with_usage(old: JobRecord, new: JobRecord, effects: tuple[Effect, ...]) -> Outcome:
    """The effects, with the usage change when the move starts or stops a run."""
    if (old.state is X) != (new.state is X):
        change = usage(new)
        if change is not None:
            effects = (*effects, change)
    return Outcome(new, effects)


def _not_admitted(record: JobRecord, event: NotAdmitted, now: float) -> Outcome:
    """Taken but never admitted: whatever the cluster still holds of it is fenced by the next epoch."""
    _allow("not admitted", record)
    if record.cluster != event.cluster:
        raise IllegalTransition(f"job is on {record.cluster or 'no cluster'}, not on {event.cluster}")
    waited = format_span(event.within)
    cancelled = f"cancelled: cluster {event.cluster} did not admit it within {waited} to confirm the cancel"
    requeued = f"requeued: cluster {event.cluster} did not admit it within {waited}"
    return _written_off(record, now, cancelled, requeued, "not admitted", end_time=now)


def _written_off(record: JobRecord, now: float, cancelled: str, requeued: str, why: str, **ended: Any) -> Outcome:
    """The run its cluster holds is given up for lost (``why``): the job ends Cancelled if a cancel
    was asked (``ended``: fields its end sets), else it goes back to the queue, not as a retry."""
    cluster = record.cluster
    cleanup: tuple[Effect, ...] = (Unassign(cluster), DropStopOrder(cluster))
    if record.cancel_requested:
        return _with_usage(record, _move(record, C, now, cancelled, **ended), cleanup)
    return _with_usage(record, _requeue(record, now, requeued), (*cleanup, Requeued(cluster, why)))


def dispatched_at(record: JobRecord) -> float | None:
    """When a Dispatched job was sent to its cluster (later entries while Dispatched, a cancel or a
    reclaim asked, do not restart its wait for admission); None in any other state."""
    return _run_sent(record) if record.state is D else None


def _run_sent(record: JobRecord) -> float | None:
    """When the job was last dispatched, which for a job on a cluster is its run's dispatch (None:
    the history shows none)."""
    for entry in reversed(record.events):
        if entry.target is D and entry.source is not D:
            return entry.time
    return None


def _cancel(record: JobRecord, event: Cancel, now: float) -> Outcome | None:
    if record.state in TERMINAL_STATES:
        raise IllegalTransition(f"job is already {record.state.value}")
    if record.state in QUEUED_STATES:
        return Outcome(_move(record, C, now, f"cancelled by {event.by}", end_time=now), ())
    _allow("cancel (on a cluster)", record)
    if record.cancel_requested:
        return None
    new = _move(record, record.state, now, f"cancel requested by {event.by}", cancel_requested=True)
    return Outcome(new, (StopOrder(record.cluster, record.epoch, f"cancelled by {event.by}", requeue=False),))


def _hold(record: JobRecord, event: Hold | Release, now: float) -> Outcome | None:
    """A hold is a flag on a queued job (as Slurm's JobHeldUser): Pending with reason "held by"; None
    when the job is already as asked."""
    if isinstance(event, Hold):
        _allow("hold", record)
        if record.held_by is not None:
            return None
        return Outcome(_move(record, P, now, f"held by {event.by}", held_by=event.by, held_at=now), ())
    _allow("release", record)
    if record.held_by is None:
        return None
    return Outcome(_move(record, record.state, now, f"released by {event.by}", held_by=None, held_at=None), ())


def _not_held(record: JobRecord) -> None:
    if record.held_by is not None:
        raise IllegalTransition(f"job is held by {record.held_by}: release it first")


def _requeue_asked(record: JobRecord, event: Requeue, now: float) -> Outcome | None:
    """Back to the queue, not as a retry: a run is stopped through its agent first (the agent's report
    of it stopped requeues it); a Failed or Cancelled job goes back at once, its end forgotten."""
    if record.state in TERMINAL_STATES:
        _allow("requeue", record)
        reason = f"requeued by {event.by}"
        ended = {"end_time": None, "cancel_requested": False, "retry_at": None, "held_by": None, "held_at": None}
        return Outcome(_requeue(record, now, reason, **ended), (Requeued(record.cluster, "requeued"),))
    _allow("requeue (on a cluster)", record)
    if record.cancel_requested:
        raise IllegalTransition("a cancel was asked: the job ends Cancelled")
    if record.requeue_requested or record.evicting:
        return None  # already on its way back to the queue
    new = _move(record, record.state, now, f"requeue requested by {event.by}", requeue_requested=True)
    return Outcome(new, (StopOrder(record.cluster, record.epoch, f"requeued by {event.by}", requeue=True),))


def _update(record: JobRecord, event: Update, now: float) -> Outcome | None:
    """The job's spec as updated, its priority and queue with it; the history names each change."""
    _allow("update", record)
    old, new = record.spec, event.spec
    changed = [
        f"{what} {before} -> {after}"
        for what, before, after in (
            ("priority", old.priority, new.priority),
            ("queue", old.queue, new.queue),
            ("walltime", _span(old.walltime), _span(new.walltime)),
        )
        if before != after
    ]
    if not changed:
        return None
    reason = f"updated by {event.by}: {', '.join(changed)}"
    return Outcome(_move(record, record.state, now, reason, spec=new, priority=new.priority, queue=new.queue), ())


def _span(seconds: float | None) -> str:
    return "none" if seconds is None else format_span(seconds)


def _agent(record: JobRecord, update: AgentUpdate, now: float) -> Outcome | None:
    """A report of the run the cluster holds. Its time, already on our clock (``ClusterReport.offset``),
    is still taken within the run's life as we saw it: no earlier than its dispatch (a run is never
    charged for time before it was sent) nor than the history's last entry, and no later than now (a
    future time would carry the accounting ahead for every tenant). That one time is both the run's
    start (or end) and its history entry's, so ``fedq job`` and its events never disagree."""
    if record.cluster != update.cluster or record.epoch != update.epoch:
        raise IllegalTransition(f"job is now epoch {record.epoch} on {record.cluster or 'no cluster'}")
    if record.state is update.state or (record.state in TERMINAL_STATES and update.state in TERMINAL_STATES):
        return None
    event = _AGENT_EVENTS.get(update.state)
    if event is None or record.state not in MOVES[event].sources:
        raise IllegalTransition(f"job is {record.state.value}; cannot become {update.state.value}")
    sent = _run_sent(record)
    last = record.events[-1].time if record.events else None
    when = min(max(t for t in (update.time, sent, last) if t is not None), now)
    cluster = update.cluster
    if update.state is A:
        return Outcome(_move(record, A, now, update.reason, at=when), (Unassign(cluster),))
    if update.state is X:
        return _with_usage(record, _move(record, X, now, update.reason, at=when, start_time=when), (Unassign(cluster),))
    cleanup: tuple[Effect, ...] = (Unassign(cluster), DropStopOrder(cluster))
    if record.cancel_requested and update.state is not S:
        # Asked to stop for good: whatever else the run ended by, the job ends Cancelled.
        reason = update.reason if update.state is C else f"cancelled as requested ({update.reason or 'stopped'})"
        return _with_usage(record, _ended(record, C, now, when, reason, update), cleanup)
    if update.state is P:
        new = _requeue(record, now, update.reason or "requeued by its cluster")
        return _with_usage(record, new, (*cleanup, Requeued(cluster, "handed back")))
    if update.state in (C, F) and record.requeue_requested:
        # Asked back to the queue: however the run stopped, it runs again, not as a retry.
        new = _requeue(record, now, f"requeued as requested ({update.reason or 'stopped'})")
        return _with_usage(record, new, (*cleanup, Requeued(cluster, "requeued")))
    if update.state is C and record.evicting:
        new = _requeue(record, now, update.reason or "evicted", preemptions=record.preemptions + 1)
        return _with_usage(record, new, (*cleanup, Requeued(cluster, "evicted")))
    reason = update.reason
    if update.state is F:
        limit = record.spec.max_retries if record.spec.max_retries is not None else update.retry.limit
        if record.retries < limit and not update.final:
            retry = record.retries + 1
            wait = update.retry.backoff(retry)
            said = (
                f"failed on {cluster}: {reason or 'no reason given'}; retry {retry} of {limit} in {format_span(wait)}"
            )
            fields = {"exit_code": update.exit_code, "log_tail": update.log_tail}
            new = _requeue(record, now, said, retries=retry, retry_at=now + wait, **fields)
            return _with_usage(record, new, (*cleanup, Requeued(cluster, "retry", now + wait)))
        if record.retries:
            reason = f"{reason} (after {record.retries} {'retry' if record.retries == 1 else 'retries'})"
    return _with_usage(record, _ended(record, update.state, now, when, reason, update), cleanup)


def _ended(record: JobRecord, target: JobState, now: float, when: float, reason: str, update: AgentUpdate) -> JobRecord:
    end = when if record.start_time is None else max(when, record.start_time)  # no job ends before it started
    fields = {"exit_code": update.exit_code, "end_time": end, "log_tail": update.log_tail}
    return _move(record, target, now, reason, at=end, **fields)
