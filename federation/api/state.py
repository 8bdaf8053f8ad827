"""What every request handler shares: the store and the views built on it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import ValidationError

from federation import keys
from federation.api.admission import Admission
from federation.api.errors import ApiError, field_path
from federation.audit import AuditLog
from federation.auth import TokenStore
from federation.clusters import ClusterService
from federation.config import FederationConfig
from federation.index_counts import IndexCounts
from federation.joblogs.store import LogStore
from federation.jobs import JobRepository
from federation.models import QueueTree, QueueTreeConfig
from federation.quotas import QuotaLedger, StoreBudget
from federation.reports.facts import JobsRead, read_facts
from federation.store import Compare, Store
from federation.submits import Submits
from federation.waits import StatusCache
from federation.watch import Hubs, WatchLimiter
from policies.clock import Clock


@dataclass
class ApiMetrics:
    """``registry``: what any token may scrape; ``usage``: the per-tenant and per-queue usage series
    (RUP, EUP, shares), for admin and metrics tokens only."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    usage: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.submitted = Counter("fedq_jobs_submitted", "Jobs accepted by the API", ["queue"], registry=self.registry)
        self.rejected = Counter(
            "fedq_api_rejections", "Requests refused with a 4xx", ["status"], registry=self.registry
        )
        self.latency = Histogram("fedq_api_request_seconds", "API request latency", ["route"], registry=self.registry)


class UnreadableTree(ApiError):
    """The stored tree fails today's checks (written before them, or by hand): a 503 naming the repair,
    which is applying a tree, rather than a 500 on every route that reads it."""

    def __init__(self, exc: ValidationError) -> None:
        first = exc.errors(include_url=False)[0]
        super().__init__(
            503,
            f"the stored queue tree cannot be read ({field_path(first['loc'])}: {first['msg']}): an admin must "
            "apply a valid one with `fedq queues apply FILE` (PUT /v1/queues)",
        )


class QueueTreeCache:
    """The applied queue tree, re-parsed only when its key's revision moves (several API replicas)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._revision = -1
        self._tree: QueueTree | None = None

    async def get(self) -> QueueTree | None:
        kv = await self._store.get(keys.QUEUES)
        if kv is None:
            self._revision, self._tree = -1, None
        elif kv.mod_revision != self._revision:
            try:
                self._tree = QueueTree(QueueTreeConfig.model_validate_json(kv.value))
            except ValidationError as exc:
                raise UnreadableTree(exc) from None
            self._revision = kv.mod_revision
        return self._tree

    def held(self) -> tuple[QueueTree, Compare] | None:
        """The tree last read, unread again, with the guard that it is still the stored one: a submit is
        checked against it and the guard goes into the txn that writes the jobs (``Submits.submit``)."""
        if self._tree is None:
            return None
        return self._tree, Compare.mod_revision(keys.QUEUES, "==", self._revision)

    async def apply(self, config: QueueTreeConfig) -> QueueTree:
        await self._store.put(keys.QUEUES, config.model_dump_json(by_alias=True).encode())
        return await self.get() or QueueTree(config)


REPORTS_AT_ONCE = 1
REPORTS_WAITING = 4
JOBS_FRESH_FOR = 5.0
"""Seconds the job records a report read stay good for the next reports on this replica."""


class ReportGate:
    """Reads of every job's index entry (reports) run ``REPORTS_AT_ONCE`` at a time per replica, with at
    most ``REPORTS_WAITING`` more queued; past that a caller gets a 429, so one tenant's report calls cost
    the replica one worker thread, never the event loop. The entries are read a page at a time and kept
    as facts, queued jobs as counts (``federation/reports/facts.py``); the facts are reused for
    ``JOBS_FRESH_FOR`` seconds, so however many reports are asked for, a replica reads them at most
    once in that time (a report's job counts may be that much behind; its usage is not)."""

    def __init__(self) -> None:
        self._running = asyncio.Semaphore(REPORTS_AT_ONCE)
        self._waiting = 0
        self._jobs = JobsRead()
        self._read_at = float("-inf")

    async def jobs(self, store: Store, now: float) -> JobsRead:
        if now - self._read_at >= JOBS_FRESH_FOR or now < self._read_at:
            self._jobs, self._read_at = await read_facts(store), now
        return self._jobs

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._waiting >= REPORTS_WAITING:
            raise ApiError(429, "too many reports are being built on this server now: retry in a few seconds")
        self._waiting += 1
        try:
            await self._running.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._running.release()


AGENT_REPORTS_AT_ONCE = 4
"""Agents' reports served at once by a replica (issue 33, point 6); the rest wait their turn, in the order
they came. A hundred agents report every second, each report a few steps of the replica's one event loop
(its txn, its reply). All let in at once, a burst of them fills the loop's ready queue, and each step of
any other request (a submit has several: its reads, its txn) waits behind every one of them; four at a
time, it waits behind a few at most, and the reports still get all the loop the rest leave (a report is
mostly a round trip to etcd, so four keep the loop busy). The turn is taken once the report is
authenticated and its body read: a client that is slow to send one, or has no credential, holds none.
A report that waits is still answered (an agent's lease is many seconds); its wait counts in the report
route's latency (``fedq_api_request_seconds``)."""


@dataclass
class ServerState:
    store: Store
    config: FederationConfig
    clock: Clock
    tokens: TokenStore
    jobs: JobRepository
    queues: QueueTreeCache
    clusters: ClusterService
    admission: Admission
    metrics: ApiMetrics
    audit: AuditLog
    budget: StoreBudget
    usage: QuotaLedger
    submits: Submits
    watches: WatchLimiter
    hubs: Hubs
    logs: LogStore
    status: StatusCache  # the leader's status, for why listed jobs wait
    counts: IndexCounts  # jobs per index range, for the queue view and explain
    reports: ReportGate = field(default_factory=ReportGate)
    agent_reports: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(AGENT_REPORTS_AT_ONCE))
