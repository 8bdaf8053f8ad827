"""The federation's side of the member-agent protocol: join, report handling, fencing, liveness.

A report is applied update by update, each a CAS on the job guarded by (cluster, epoch): an update
for a run the federation no longer considers current is refused and answered with a cancellation,
so the agent kills it. No job can be advanced by two clusters, or twice by one.
"""

from __future__ import annotations

import json
from typing import Any

from federation import keys
from federation.auth import Role, TokenStore
from federation.jobs import Conflict, JobRepository, NotFound, StoredJob
from federation.models import JobState
from federation.models.cluster import (
    Assignment,
    Cancellation,
    ClusterRecord,
    ClusterReport,
    ClusterState,
    JoinRequest,
    LatestReport,
    ReportReply,
    StatusUpdate,
)
from federation.store import Op, Store
from policies.clock import Clock

_AGENT_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.ADMITTED: frozenset({JobState.DISPATCHED}),
    JobState.RUNNING: frozenset({JobState.DISPATCHED, JobState.ADMITTED}),
    JobState.SUCCEEDED: frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING}),
    JobState.FAILED: frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING}),
    JobState.CANCELLED: frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING}),
    JobState.PENDING: frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING}),
}


class JoinRefused(Exception):
    pass


class UnknownCluster(KeyError):
    pass


class ClusterService:
    def __init__(self, store: Store, jobs: JobRepository, tokens: TokenStore, clock: Clock) -> None:
        self.store = store
        self.jobs = jobs
        self.tokens = tokens
        self.clock = clock

    async def join(self, request: JoinRequest) -> str:
        """Spend the join token and return the cluster's long-lived credential."""
        now = self.clock.now()
        name = await self.tokens.consume_join(request.token, request.name, now)
        if name is None:
            raise JoinRefused("join token is invalid, expired or already used: ask an admin for a new one")
        if name != request.name:
            raise JoinRefused(f"this join token was made for cluster {name!r}, not {request.name!r}")
        existing = await self.get(name)
        record = ClusterRecord(
            name=name,
            backend=request.backend,
            labels=request.labels,
            joined_at=now,
            cordoned=existing.cordoned if existing else False,
        )
        await self.store.put(keys.cluster(name), record.model_dump_json().encode())
        return await self.tokens.issue(Role.CLUSTER, name)

    async def get(self, name: str) -> ClusterRecord | None:
        kv = await self.store.get(keys.cluster(name))
        return None if kv is None else ClusterRecord.model_validate_json(kv.value)

    async def all(self) -> list[tuple[ClusterRecord, LatestReport | None]]:
        stored = await self.store.range(keys.REPORTS)
        reports = {kv.key.removeprefix(keys.REPORTS): LatestReport.from_bytes(kv.value) for kv in stored}
        records = [ClusterRecord.model_validate_json(kv.value) for kv in await self.store.range(keys.CLUSTERS)]
        return [(record, reports.get(record.name)) for record in records]

    async def set_cordon(self, name: str, cordoned: bool) -> ClusterRecord:
        record = await self.get(name)
        if record is None:
            raise UnknownCluster(name)
        record.cordoned = cordoned
        await self.store.put(keys.cluster(name), record.model_dump_json().encode())
        return record

    def state_of(self, record: ClusterRecord, latest: LatestReport | None, lost_after: float) -> ClusterState:
        if latest is None or self.clock.now() - latest.time > lost_after:
            return ClusterState.UNREACHABLE
        return ClusterState.CORDONED if record.cordoned else ClusterState.READY

    async def report(self, name: str, report: ClusterReport) -> ReportReply:
        record = await self.get(name)
        if record is None:
            raise UnknownCluster(name)
        now = self.clock.now()
        await self.store.put(keys.report(name), LatestReport(time=now, report=report).to_bytes())
        cancellations: dict[tuple[str, int], Cancellation] = {}
        refused: list[dict[str, Any]] = []
        for update in report.updates:
            problem = await self._apply(name, update, now)
            if problem is not None:
                refused.append({"job_id": update.job_id, "epoch": update.epoch, "reason": problem})
                cancellations[(update.job_id, update.epoch)] = Cancellation(
                    job_id=update.job_id, epoch=update.epoch, reason=f"stale run: {problem}"
                )
        for job_id, epoch in report.known or ():
            problem = await self._stale(name, job_id, epoch)
            if problem is not None:
                cancellations[(job_id, epoch)] = Cancellation(
                    job_id=job_id, epoch=epoch, reason=f"stale run: {problem}"
                )
        for kv in await self.store.range(keys.CANCELS + name + "/"):
            order = json.loads(kv.value)
            job_id = kv.key.rsplit("/", 1)[1]
            cancellations.setdefault(
                (job_id, order["epoch"]), Cancellation(job_id=job_id, epoch=order["epoch"], reason=order["reason"])
            )
        return ReportReply(
            assignments=await self._assignments(name),
            cancellations=list(cancellations.values()),
            refused=refused,
            state=ClusterState.CORDONED if record.cordoned else ClusterState.READY,
        )

    async def _stale(self, name: str, job_id: str, epoch: int) -> str | None:
        try:
            job = (await self.jobs.get(job_id)).record
        except NotFound:
            return "job no longer exists"
        if job.cluster != name or job.epoch != epoch:
            return f"job is now epoch {job.epoch} on {job.cluster or 'no cluster'}"
        if job.state.terminal or job.state.queued:
            return f"job is {job.state.value}"
        return None

    async def _apply(self, name: str, update: StatusUpdate, now: float) -> str | None:
        """Advance one job from an agent's update; returns why it was refused, or None."""
        for _ in range(5):
            try:
                stored = await self.jobs.get(update.job_id)
            except NotFound:
                return "job no longer exists"
            job = stored.record
            if job.cluster != name or job.epoch != update.epoch:
                return f"job is now epoch {job.epoch} on {job.cluster or 'no cluster'}"
            if job.state == update.state or (job.state.terminal and update.state.terminal):
                return None
            if job.state not in _AGENT_TRANSITIONS[update.state]:
                return f"job is {job.state.value}; cannot become {update.state.value}"
            try:
                await self._transition(name, stored, update, now)
                return None
            except Conflict:
                continue
        return "job kept changing; will retry on the next report"

    async def _transition(self, name: str, stored: StoredJob, update: StatusUpdate, now: float) -> None:
        job = stored.record
        cleanup = [Op.delete(keys.assignment(name, job.id))]
        if update.state in (JobState.ADMITTED, JobState.RUNNING):
            fields: dict[str, Any] = {}
            if update.state is JobState.RUNNING:
                fields["start_time"] = update.time
            await self.jobs.transition(stored, update.state, now=now, reason=update.reason, extra_ops=cleanup, **fields)
            return
        cleanup.append(Op.delete(keys.cancel(name, job.id)))
        order = await self.store.get(keys.cancel(name, job.id))
        requeue = update.state is JobState.PENDING or (
            update.state is JobState.CANCELLED and order is not None and json.loads(order.value).get("requeue", False)
        )
        if requeue:
            await self.jobs.transition(
                stored,
                JobState.PENDING,
                now=now,
                reason=update.reason or "requeued by its cluster",
                cluster="",
                extra_ops=cleanup,
                attempt=job.attempt + 1,
                preemptions=job.preemptions + (update.state is JobState.CANCELLED),
                cancel_requested=False,
                start_time=None,
            )
            return
        await self.jobs.transition(
            stored,
            update.state,
            now=now,
            reason=update.reason,
            extra_ops=cleanup,
            exit_code=update.exit_code,
            end_time=update.time,
            log_tail=update.log_tail,
        )

    async def _assignments(self, name: str) -> list[Assignment]:
        assignments = []
        for kv in await self.store.range(keys.ASSIGNMENTS + name + "/"):
            job_id = kv.key.rsplit("/", 1)[1]
            try:
                job = (await self.jobs.get(job_id)).record
            except NotFound:
                await self.store.delete(kv.key)
                continue
            if job.cluster != name or job.state is not JobState.DISPATCHED:
                await self.store.delete(kv.key)
                continue
            assignments.append(Assignment.of(job))
        return assignments
