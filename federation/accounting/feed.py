"""The accounting's one input: job records, counted by the lifecycle's usage rule.

Live, the leader counts every job record it sees change (its own commits and the watch's, which
carries the agents' reports written by any API replica): ``lifecycle.usage`` says whether the record
holds a run from its start or has let go of it. After a takeover (or a reload after a dead watch) the
changes since the saved accounting are replayed from the store's history in order, the same rule for
each record (``replay``); when that history is compacted, the accounting is brought up to the jobs'
records instead (``catch_up``): runs it holds that have ended stop when their job left its cluster,
runs that started and ended since are counted whole, jobs running now are counted from their start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import structlog
from pydantic import ValidationError

from federation import keys
from federation.accounting.accountant import Accountant
from federation.lifecycle import RunStarted, RunStopped, usage
from federation.models import JobRecord, JobState
from federation.scheduler.job_view import held_by
from federation.scheduler.state import FederationState
from federation.store import CompactedError, Store, get_many
from policies.clock import Clock

log = structlog.get_logger("fedq.accounting")


def count(accountant: Accountant, change: RunStarted | RunStopped | None) -> None:
    """A run's start or stop into the accounting (the simulator's runs too)."""
    if isinstance(change, RunStarted):
        accountant.start(change.job_id, change.tenant, change.queue, change.cluster, change.resources, change.at)
    elif isinstance(change, RunStopped):
        accountant.stop(change.job_id, change.at)


class UsageFeed:
    def __init__(self, accountant: Accountant, store: Store, clock: Clock, mark: Callable[[], Awaitable[int]]) -> None:
        self.accountant = accountant
        self.store = store
        self.clock = clock
        self.mark = mark  # writes a marker key and returns its revision: how far the history is read
        self.counted_to = 0  # job changes up to this revision were counted from the store's history

    def observe(self, record: JobRecord, revision: int) -> None:
        """A job record written at ``revision``, counted unless the history replay counted it."""
        if revision > self.counted_to:
            self.apply(usage(record))

    def apply(self, change: RunStarted | RunStopped | None) -> None:
        count(self.accountant, change)

    async def replay(self, after: int | None, target: Callable[[], int]) -> bool:
        """Count the job changes after revision ``after`` as the leader counts them live, read in order
        from the store's history until past ``target()`` (then the watch counts only later changes).

        Everything is read before anything is counted, and nothing is awaited between the last check
        against ``target()`` and the counting. False, with nothing counted, when there is no ``after``
        or the history before it is compacted: the caller then falls back to the jobs' records."""
        if after is None:
            return False
        upto, records = after, []
        try:
            while upto < target():
                until = await self.mark()
                records += await self._history(upto, until)
                upto = until
        except CompactedError:
            return False
        for record in records:
            self.apply(usage(record))
        self.counted_to = upto
        return True

    async def _history(self, after: int, until: int) -> list[JobRecord]:
        """The job records written after revision ``after`` up to ``until`` (a write in the followed range)."""
        records = []
        events = self.store.watch(keys.FOLLOWED_FROM, start_revision=after + 1, end=keys.FOLLOWED_TO, previous=False)
        async with contextlib.aclosing(events):
            async for event in events:
                kv = event.kv
                if event.type == "put" and kv is not None and kv.key.startswith(keys.JOBS):
                    try:
                        records.append(JobRecord.from_bytes(kv.value))
                    except ValidationError as exc:
                        log.error("skipping a stored value the scheduler cannot read", key=kv.key, error=str(exc))
                if event.revision >= until:
                    break
        return records

    async def catch_up(self, state: FederationState, counted: set[str], after: int | None) -> None:
        """Bring an accounting that trails the jobs (a saved one, or one kept while the watch was dead)
        up to them: ``counted`` are the runs it held, ``after`` the store revision of the job changes it
        had seen. A run it holds that has ended since (its job is not running, or runs again from
        another start) stops when it left its cluster by the job's history (now, for a job no longer
        in the store); a run that ended after ``after`` and that it never held (it started later, or
        its start had not been seen) is counted whole, backdated; a job running now is counted from its
        start. The records are read first (again for ends that arrive meanwhile); the counting after
        the reads has no await."""
        records: dict[str, JobRecord | None] = {}
        while wanted := sorted(self._ended_since(state, after) - records.keys()):
            for job_id, kv in zip(wanted, await get_many(self.store, [keys.job(j) for j in wanted]), strict=True):
                records[job_id] = JobRecord.from_bytes(kv.value) if kv is not None else None
        for job_id in self._ended_runs(state):
            record, started = records.get(job_id), self.accountant.started(job_id)
            end = record.left_at(started) if record is not None and started is not None else None
            self.accountant.stop(job_id, end if end is not None else self.clock.now())
        for job_id, record in records.items():
            if job_id in counted or record is None or record.start_time is None or record.end_time is None:
                continue
            resources = record.spec.total_resources()
            self.accountant.start(job_id, record.tenant, record.queue, record.cluster, resources, record.start_time)
            self.accountant.stop(job_id, record.end_time)
        for job_id, entry in state.entries.items():
            if entry.state is JobState.RUNNING and entry.started_at is not None:
                info = entry.info
                self.accountant.start(job_id, info.tenant, info.queue, entry.cluster, held_by(info), entry.started_at)

    def _ended_runs(self, state: FederationState) -> set[str]:
        """The runs the accounting holds whose job no longer runs from that run's start."""
        ended = set()
        for job_id in self.accountant.running():
            entry = state.entries.get(job_id)
            if entry is None or entry.state is not JobState.RUNNING:
                ended.add(job_id)
            elif entry.started_at != self.accountant.started(job_id):
                ended.add(job_id)  # requeued and running again: the run held is over
        return ended

    def _ended_since(self, state: FederationState, after: int | None) -> set[str]:
        """Jobs whose end the accounting has not seen: its runs that ended, and jobs that finished in
        a change after revision ``after``."""
        ended = self._ended_runs(state)
        if after is not None:
            ended |= {job_id for job_id, (_, revision, *_) in state.finished.items() if revision > after}
        return ended
