"""Committing the cycle's plan: CAS changes batched into txns under the leader's fence.

Each change is guarded by its job's ``mod_revision``; a batch is one txn (up to etcd's op limit).
If a batch fails because one job moved meanwhile, its changes are retried one by one so the others
still land; a failing fence means we are no longer leader and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from federation.jobs import Change, FenceFailed, StoredJob, change_of, commit_batched
from federation.lifecycle import Event, IllegalTransition, transition
from federation.models import JobRecord
from federation.scheduler.state import Entry, FederationState
from federation.store import Compare, Store


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


class StorePort:
    """The scheduling turn's port in production (``federation.scheduler.turn``): each event becomes
    its job's CAS change, committed under the leader's fence; ``landed`` hears of each record that
    landed (the accounting: the watch skips our own commits)."""

    def __init__(self, committer: Committer, landed: Callable[[JobRecord], None]) -> None:
        self.committer = committer
        self.landed = landed

    async def commit(self, events: Sequence[tuple[str, Event]], now: float) -> list[JobRecord]:
        entries = self.committer.state.entries
        changes = [
            change
            for job_id, event in events
            if (entry := entries.get(job_id)) is not None and (change := change_for(entry, event, now)) is not None
        ]
        landed = [change.record for change in await self.committer.commit(changes)] if changes else []
        for record in landed:
            self.landed(record)
        return landed


def change_for(entry: Entry, event: Event, now: float) -> Change | None:
    """The scheduler's side of the lifecycle: the CAS change one event makes to a job it holds (None
    when the event changes nothing, or cannot happen to the job any more)."""
    stored = stored_of(entry)
    try:
        outcome = transition(stored.record, event, now)
    except IllegalTransition:
        return None
    return None if outcome is None else change_of(stored, outcome)
