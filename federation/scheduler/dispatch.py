"""Committing the cycle's plan: CAS changes batched into txns under the leader's fence.

Each change is guarded by its job's ``mod_revision``; a batch is one txn (up to etcd's op limit).
If a batch fails because one job moved meanwhile, its changes are retried one by one so the others
still land; a failing fence means we are no longer leader and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from federation import keys
from federation.jobs import (
    Change,
    FenceFailed,
    StoredJob,
    cancel_op,
    commit_batched,
    prepare_transition,
    requeue_transition,
    write_ops,
)
from federation.models import JobRecord, JobState
from federation.scheduler.state import Entry, FederationState
from federation.store import Compare, Op, Store


class Deposed(Exception):
    """The leader fence failed: another scheduler leads now."""


def stored_of(entry: Entry) -> StoredJob:
    return StoredJob(JobRecord.from_bytes(entry.raw), entry.revision)


class Committer:
    def __init__(self, store: Store, state: FederationState, fence: Callable[[], Compare | None]) -> None:
        self.store = store
        self.state = state
        self.fence = fence
        self._in_flight: dict[str, Change] = {}  # job id -> its change while the txn is out

    async def commit(self, changes: Sequence[Change]) -> list[Change]:
        """Write what can be written under the leader's fence; returns the changes that landed, each
        batch applied to the state as it lands (the watch then skips them)."""
        for change in changes:
            self._in_flight[change.record.id] = change
        try:
            return await commit_batched(self.store, changes, fence=self.fence(), on_landed=self._apply)
        except FenceFailed:
            raise Deposed("the leader key is no longer ours") from None
        finally:
            for change in changes:
                if self._in_flight.get(change.record.id) is change:
                    del self._in_flight[change.record.id]

    def written(self, job_id: str, value: bytes) -> JobRecord | None:
        """Our own change's record if ``value`` is exactly what it writes: the watch may deliver a commit
        before its txn's reply arrives, and then need not parse it."""
        change = self._in_flight.get(job_id)
        return change.record if change is not None and change.raw == value else None

    def _apply(self, changes: list[Change], revision: int) -> None:
        for change in changes:
            self.state.upsert_job(change.record, revision, change.raw)


def dispatch_change(entry: Entry, cluster: str, now: float) -> Change:
    """Pending -> Dispatched(cluster, epoch+1), with the assignment the cluster's agent will pick up."""
    stored = stored_of(entry)
    epoch = stored.record.epoch + 1
    return prepare_transition(
        stored,
        JobState.DISPATCHED,
        now=now,
        reason=f"dispatched to {cluster}",
        cluster=cluster,
        epoch=epoch,
        extra_ops=[Op.put(keys.assignment(cluster, stored.record.id), b"")],
    )


def requeue_change(entry: Entry, now: float, reason: str) -> Change:
    """Back to the global queue; the next dispatch gets a new epoch, which fences the old run."""
    stored = stored_of(entry)
    record = stored.record
    return requeue_transition(
        stored,
        now=now,
        reason=reason,
        extra_ops=[
            Op.delete(keys.assignment(record.cluster, record.id)),
            Op.delete(keys.cancel(record.cluster, record.id)),
        ],
    )


def mark_change(entry: Entry, target: JobState, now: float, reason: str) -> Change:
    """Pending <-> Reserved <-> Unschedulable: visible reasons for waiting, no cluster involved."""
    return prepare_transition(stored_of(entry), target, now=now, reason=reason)


def reclaim_change(entry: Entry, reason: str) -> Change:
    """Ask the job's agent to stop it and give it back to the queue (preemption for reclaim)."""
    stored = stored_of(entry)
    record = stored.record.model_copy(update={"cancel_requested": True, "reason": f"preempted: {reason}"})
    ops = [*write_ops(record), cancel_op(record, f"preempted: {reason}", requeue=True)]
    return Change(record, Compare.mod_revision(keys.job(record.id), "==", stored.revision), ops)
