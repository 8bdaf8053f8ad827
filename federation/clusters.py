"""The federation's side of the member-agent protocol: join, report handling, fencing, liveness.

A report's updates are applied as CAS changes on the jobs, checked against (cluster, epoch): an update
for a run the federation no longer considers current is refused and answered with a cancellation,
so the agent kills it. No job can be advanced by two clusters, or twice by one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

import structlog
from pydantic import ValidationError

from federation import keys
from federation.auth import TokenRecord, TokenStore
from federation.config import ClusterLivenessConfig, JobsConfig
from federation.joblogs.intake import LogIntake
from federation.jobs import Change, JobRepository, NotFound, StoredJob, change_of, commit_batched
from federation.lifecycle import AgentUpdate, IllegalTransition, RetryPolicy, transition
from federation.models import JobRecord, JobState
from federation.models.agent_report import report_offset, update_event
from federation.models.cluster import (
    Assignment,
    Cancellation,
    ClusterGrant,
    ClusterRecord,
    ClusterReport,
    ClusterShape,
    ClusterState,
    JoinRequest,
    LatestReport,
    ReportReply,
    StatusUpdate,
)
from federation.store import Compare, KeyValue, Op, Store, get_many
from policies.clock import Clock

log = structlog.get_logger("fedq.clusters")
T = TypeVar("T")


class JoinRefused(Exception):
    pass


class UnknownCluster(KeyError):
    pass


class ClaimRefused(ValueError):
    """A join or report claims more (labels, capacity) than the cluster's join token allowed."""


class ReportTooLarge(ValueError):
    """The report's capacity and running jobs would not fit one store request."""


MAX_STORED_REPORT = 1_400_000  # bytes: under etcd's 1.5 MiB request limit, with room for the key and framing


class ClusterService:
    def __init__(
        self,
        store: Store,
        jobs: JobRepository,
        tokens: TokenStore,
        clock: Clock,
        retries: JobsConfig | None = None,
        liveness: ClusterLivenessConfig | None = None,
        logs: LogIntake | None = None,
    ) -> None:
        self.store = store
        self.logs = logs
        self.jobs = jobs
        self.tokens = tokens
        self.clock = clock
        self.changes = 0
        """How many times this replica changed a cluster's record or shape: what a submit is judged on
        (``federation/api/admission.py`` reads them again after a change here)."""
        config = retries if retries is not None else JobsConfig()
        self.retry = RetryPolicy(config.max_retries, config.backoff)
        lost_after = (liveness or ClusterLivenessConfig()).lost_after
        self.lease = lost_after if math.isfinite(lost_after) else None

    async def join(self, request: JoinRequest) -> str:
        """Spend the join token and return the cluster's long-lived credential, which replaces any earlier one."""
        now = self.clock.now()
        token = await self.tokens.consume_join(request.token, request.name, lambda r: _labels_allowed(r, request))
        if token is None:
            raise JoinRefused("join token is invalid, expired or already used: ask an admin for a new one")
        name = token.name
        if name != request.name:
            raise JoinRefused(f"this join token was made for cluster {name!r}, not {request.name!r}")
        existing = await self.get(name)
        record = ClusterRecord(
            name=name,
            backend=request.backend,
            labels=request.labels,
            joined_at=now,
            cordoned=existing.cordoned if existing else False,
            grant=token.grant or ClusterGrant(),
        )
        await self.store.put(keys.cluster(name), record.model_dump_json().encode())
        self.changes += 1
        return await self.tokens.rotate_cluster(name)

    async def get(self, name: str) -> ClusterRecord | None:
        kv = await self.store.get(keys.cluster(name))
        return None if kv is None else ClusterRecord.model_validate_json(kv.value)

    async def all(self) -> list[tuple[ClusterRecord, LatestReport | None]]:
        """Every joined cluster with its last report, timed when it was last heard; a report that cannot be
        read (an older format, an outside write) counts as none until the cluster's next report replaces it."""
        reports = await self._each(keys.REPORTS, LatestReport.from_bytes, "report")
        for kv in await self.store.range(keys.HEARD):
            name = kv.key.removeprefix(keys.HEARD)
            latest = reports.get(name)
            if latest is not None and (heard := float(kv.value)) > latest.time:
                reports[name] = latest.model_copy(update={"time": heard})
        records = [ClusterRecord.model_validate_json(kv.value) for kv in await self.store.range(keys.CLUSTERS)]
        return [(record, reports.get(record.name)) for record in records]

    async def shapes(self) -> list[tuple[ClusterRecord, ClusterShape | None]]:
        """Every joined cluster with its node kinds and what it honours (``ClusterShape``), for submits."""
        shapes = await self._each(keys.SHAPES, ClusterShape.from_bytes, "cluster shape")
        records = [ClusterRecord.model_validate_json(kv.value) for kv in await self.store.range(keys.CLUSTERS)]
        return [(record, shapes.get(record.name)) for record in records]

    async def _each(self, prefix: str, parse: Callable[[bytes], T], what: str) -> dict[str, T]:
        """Every value under ``prefix`` by cluster name; one that cannot be read (an older format, an outside
        write) is logged and left out until the cluster's next report replaces it."""
        found = {}
        for kv in await self.store.range(prefix):
            try:
                found[kv.key.removeprefix(prefix)] = parse(kv.value)
            except ValidationError as exc:
                log.warning(f"ignoring a stored {what} that cannot be read", key=kv.key, error=str(exc))
        return found

    async def set_cordon(self, name: str, cordoned: bool) -> ClusterRecord:
        record = await self.get(name)
        if record is None:
            raise UnknownCluster(name)
        record.cordoned = cordoned
        await self.store.put(keys.cluster(name), record.model_dump_json().encode())
        self.changes += 1
        return record

    def state_of(self, record: ClusterRecord, latest: LatestReport | None, lost_after: float) -> ClusterState:
        if latest is None or self.clock.now() - latest.time > lost_after:
            return ClusterState.UNREACHABLE
        return ClusterState.CORDONED if record.cordoned else ClusterState.READY

    async def report(self, name: str, report: ClusterReport) -> ReportReply:
        # What the report is checked against and answered with, in one request: a hundred agents report
        # every second. A report that names the stored one (most of them) is also heard in that request.
        now = self.clock.now()
        reads = [
            Op.get(keys.cluster(name)),
            Op.range(keys.CANCELS + name + "/"),
            Op.range(keys.ASSIGNMENTS + name + "/"),
        ]
        unchanged = report.unchanged_since
        if unchanged:
            result = await self.store.txn(
                [Compare.exists(keys.cluster(name)), Compare.mod_revision(keys.report(name), "==", unchanged)],
                [_heard(name, now), *reads],
                reads,
            )
            responses = result.responses[1:] if result.succeeded else result.responses
        else:
            responses = (await self.store.txn((), reads)).responses
        found, cancels, assigned = responses
        if not isinstance(found, KeyValue):
            raise UnknownCluster(name)
        assert isinstance(cancels, list) and isinstance(assigned, list)
        record = ClusterRecord.model_validate_json(found.value)
        if unchanged:
            revision: int | None = unchanged if result.succeeded else None
            if not result.succeeded:  # the stored report is no longer the one it names: the next goes whole
                await self.store.txn((), [_heard(name, now)])
        else:
            revision = await self._store(name, record, report, now)
        cancellations: dict[tuple[str, int], Cancellation] = {}
        refused: list[dict[str, Any]] = []
        problems = await self._apply_all(name, report.updates, now, report_offset(report, now))
        moved = set()  # out of Dispatched by this report: their assignment keys went with the change
        for update, problem in zip(report.updates, problems, strict=True):
            if problem is None:
                moved.add(update.job_id)
            else:
                refused.append({"job_id": update.job_id, "epoch": update.epoch, "reason": problem})
                cancellations[(update.job_id, update.epoch)] = Cancellation(
                    job_id=update.job_id, epoch=update.epoch, reason=f"stale run: {problem}"
                )
        known = report.known or []
        records = await get_many(self.store, [keys.job(job_id) for job_id, _ in known])
        for (job_id, epoch), kv in zip(known, records, strict=True):
            problem = _stale(name, kv, epoch)
            if problem is not None:
                cancellations[(job_id, epoch)] = Cancellation(
                    job_id=job_id, epoch=epoch, reason=f"stale run: {problem}"
                )
        for kv in cancels:
            order = json.loads(kv.value)
            job_id = kv.key.rsplit("/", 1)[1]
            cancellations.setdefault(
                (job_id, order["epoch"]), Cancellation(job_id=job_id, epoch=order["epoch"], reason=order["reason"])
            )
        return ReportReply(
            assignments=await self._assignments(name, [kv for kv in assigned if _assigned_job(kv) not in moved]),
            cancellations=list(cancellations.values()),
            refused=refused,
            state=ClusterState.CORDONED if record.cordoned else ClusterState.READY,
            lease=self.lease,
            log_acks=[] if self.logs is None else await self.logs.take(name, report.logs),
            log_limits=None if self.logs is None else self.logs.limits,
            revision=revision,
        )

    async def _store(self, name: str, record: ClusterRecord, report: ClusterReport, now: float) -> int:
        """Store a whole report (its shape too when that changed); the revision it was stored at."""
        over = record.grant.refuses_capacity(report.nodes)
        if over is not None:
            raise ClaimRefused(over)
        stored = LatestReport.of(now, report).to_bytes()
        if len(stored) > MAX_STORED_REPORT:
            raise ReportTooLarge(
                f"the report's nodes and {len(report.running)} running jobs take {len(stored):,} bytes stored; "
                f"at most {MAX_STORED_REPORT:,} fit one etcd request: report fewer, larger node shapes"
            )
        # The shape is written only when it changed: the compare costs no more than the put alone.
        shape = ClusterShape.of(report).to_bytes()
        report_put = Op.put(keys.report(name), stored)
        result = await self.store.txn(
            [Compare.value(keys.shape(name), "==", shape)], [report_put], [report_put, Op.put(keys.shape(name), shape)]
        )
        if not result.succeeded:
            self.changes += 1
        return result.revision

    async def _apply_all(self, name: str, updates: list[StatusUpdate], now: float, offset: float) -> list[str | None]:
        """Apply every update, its time moved by ``offset`` onto our clock; returns each one's refusal
        (None: applied, or nothing to do).

        A burst of starts or ends is thousands of updates, so they go in rounds of distinct jobs (one
        job's updates stay in the order the agent sent them): each round reads its records and writes
        its transitions in batched txns, and only a job that moved meanwhile takes the one-by-one path.
        """
        problems: list[str | None] = [None] * len(updates)
        rounds: list[list[int]] = []
        seen: dict[str, int] = {}
        for i, update in enumerate(updates):
            turn = seen.get(update.job_id, 0)
            seen[update.job_id] = turn + 1
            if turn == len(rounds):
                rounds.append([])
            rounds[turn].append(i)
        for indices in rounds:
            batch = [updates[i] for i in indices]
            for i, problem in zip(indices, await self._apply_round(name, batch, now, offset), strict=True):
                problems[i] = problem
        return problems

    async def _apply_round(self, name: str, batch: list[StatusUpdate], now: float, offset: float) -> list[str | None]:
        """Updates of distinct jobs: their records read in a few txns, their changes written in a few."""
        records = await get_many(self.store, [keys.job(update.job_id) for update in batch])
        problems: list[str | None] = []
        planned: dict[int, Change] = {}
        for i, (update, kv) in enumerate(zip(batch, records, strict=True)):
            if kv is None:
                problems.append("job no longer exists")
                continue
            stored = StoredJob(JobRecord.from_bytes(kv.value), kv.mod_revision)
            problem, change = _plan(stored, update_event(update, name, self.retry, offset), now)
            problems.append(problem)
            if change is not None:
                planned[i] = change
        landed = {id(change) for change in await commit_batched(self.store, list(planned.values()))}
        for i, change in planned.items():
            if id(change) not in landed:  # the job moved since it was read: read it again and decide again
                problems[i] = await self._apply(batch[i].job_id, update_event(batch[i], name, self.retry, offset), now)
        return problems

    async def _apply(self, job_id: str, event: AgentUpdate, now: float) -> str | None:
        """Advance one job from an agent's update, re-reading it while it keeps changing."""
        for _ in range(5):
            try:
                stored = await self.jobs.get(job_id)
            except NotFound:
                return "job no longer exists"
            problem, change = _plan(stored, event, now)
            if change is None or await commit_batched(self.store, [change]):
                return problem
        return "job kept changing; will retry on the next report"

    async def _assignments(self, name: str, assigned: list[KeyValue]) -> list[Assignment]:
        """Assignments for the jobs still Dispatched to this cluster (of its ``assigned`` keys); stale
        assignment keys are dropped."""
        records = await get_many(self.store, [keys.job(_assigned_job(kv)) for kv in assigned])
        assignments = []
        stale = []
        for kv, record in zip(assigned, records, strict=True):
            job = JobRecord.from_bytes(record.value) if record is not None else None
            if job is None or job.cluster != name or job.state is not JobState.DISPATCHED:
                stale.append(Op.delete(kv.key))
                continue
            assignments.append(Assignment.of(job))
        for start in range(0, len(stale), self.store.max_txn_ops):
            await self.store.txn((), stale[start : start + self.store.max_txn_ops])
        return assignments


def _assigned_job(kv: KeyValue) -> str:
    return kv.key.rsplit("/", 1)[1]


def _labels_allowed(token: TokenRecord, request: JoinRequest) -> None:
    """Refuse, leaving the token unspent, a join whose labels its token does not allow."""
    refused = None if token.grant is None else token.grant.refuses_labels(request.labels)
    if refused is not None:
        raise ClaimRefused(refused)


def _stale(name: str, kv: KeyValue | None, epoch: int) -> str | None:
    """Why a run the agent holds (its record read here) is no longer this cluster's, if it is not."""
    if kv is None:
        return "job no longer exists"
    job = JobRecord.from_bytes(kv.value)
    if job.cluster != name or job.epoch != epoch:
        return f"job is now epoch {job.epoch} on {job.cluster or 'no cluster'}"
    if job.state.terminal or job.state.queued:
        return f"job is {job.state.value}"
    return None


def _plan(stored: StoredJob, event: AgentUpdate, now: float) -> tuple[str | None, Change | None]:
    """The refusal of an agent's update, or the CAS change it makes (None for both: nothing to do)."""
    try:
        outcome = transition(stored.record, event, now)
    except IllegalTransition as exc:
        return str(exc), None
    return None, None if outcome is None else change_of(stored, outcome)


def _heard(name: str, now: float) -> Op:
    """When ``name`` was last heard: a report that names the stored one writes only this, a few bytes."""
    return Op.put(keys.heard(name), json.dumps(now).encode())
