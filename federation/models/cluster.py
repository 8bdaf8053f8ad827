"""The member-agent protocol: join, the report (heartbeat + capacity + status) and its reply.

Armada-style pull: the agent calls the federation; the federation never calls a cluster. Every
assignment carries an ``epoch``; a report about an older epoch than the federation's is refused
item by item and the agent is told to kill that run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from federation.capabilities import FIELDS, refuses_labels
from federation.models.agent_report import NodeFacts, ReportFacts, report_offset
from federation.models.job import JobRecord, JobSpecBody, JobState, _check_labels
from federation.models.logs import MAX_CHUNKS_PER_REPORT, LogAck, LogChunk, LogLimits
from federation.models.numbers import Integer
from federation.models.resources import Resources
from policies import resources as res
from policies.format import format_labels, format_resources

MAX_NODES_PER_REPORT = 10_000
MAX_ITEMS_PER_REPORT = 50_000
MAX_RUNNING_PER_REPORT = 30_000  # a stored report must fit etcd's 1.5 MiB request limit (~40 B per running job)
LOG_TAIL_MAX = 4096


class ClusterState(StrEnum):
    READY = "Ready"
    UNREACHABLE = "Unreachable"
    CORDONED = "Cordoned"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class NodeReport(_Strict):
    """One node, or one node shape with ``count`` identical nodes when the cluster is large."""

    name: str = Field(min_length=1, max_length=253)
    count: Integer = Field(1, ge=1)
    allocatable: Resources
    free: Resources
    labels: dict[str, str] = Field(default_factory=dict)
    unschedulable: bool = False

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_labels(value, "node label")


def summed(nodes: Iterable[NodeFacts], *, free: bool = False) -> dict[str, float]:
    """A cluster's allocatable (or free) resources: each node entry times its count."""
    total: dict[str, float] = {}
    for node in nodes:
        res.iadd(total, node.free if free else node.allocatable, node.count)
    return total


NodeKind = tuple[tuple[tuple[str, float], ...], tuple[tuple[str, str], ...]]
"""A node's size and labels: what a cluster could ever hold is how many nodes of each kind it has."""


def node_kinds(nodes: Iterable[NodeFacts]) -> Counter[NodeKind]:
    """How many nodes of each size and labels, not what is free on them (a report may split one size by
    what is free on it, so counts are summed per kind)."""
    kinds: Counter[NodeKind] = Counter()
    for n in nodes:
        kinds[(tuple(sorted(n.allocatable.items())), tuple(sorted(n.labels.items())))] += n.count
    return kinds


class ClusterGrant(_Strict):
    """What an admin allowed a cluster in its join token: the labels it may join with (None: any) and
    the most its reports may claim, summed over its nodes (None: any; a resource not named: none)."""

    labels: dict[str, str] | None = None
    capacity: Resources | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return None if value is None else _check_labels(value, "cluster label")

    def refuses_labels(self, labels: dict[str, str]) -> str | None:
        """Why a join with ``labels`` is refused, if it is."""
        if self.labels is None:
            return None
        extra = {k: v for k, v in labels.items() if self.labels.get(k) != v}
        if not extra:
            return None
        allowed = format_labels(self.labels) or "none"
        return f"labels {format_labels(extra)} are not allowed by this cluster's join token (allowed: {allowed})"

    def refuses_capacity(self, nodes: Iterable[NodeFacts]) -> str | None:
        """Why a report of ``nodes`` claims more than the join token allowed, if it does."""
        if self.capacity is None:
            return None
        claimed = summed(nodes)
        over = {r: amount for r, amount in claimed.items() if amount > self.capacity.get(r, 0.0) + 1e-9}
        if not over:
            return None
        return (
            f"the report claims {format_resources(over)}, more than this cluster's join token allows "
            f"({format_resources(self.capacity) or 'nothing'}): ask the federation admin for a join token "
            "with a higher capacity, and join again"
        )


class RunningJob(_Strict):
    job_id: str = Field(min_length=1, max_length=128)
    epoch: Integer = Field(ge=0)
    resources: Resources
    started_at: float | None = None
    expected_end: float | None = None


class StatusUpdate(_Strict):
    """A job-level state change observed by the agent (tasks are summarised into the job)."""

    job_id: str = Field(min_length=1, max_length=128)
    epoch: Integer = Field(ge=0)
    state: JobState
    time: float
    exit_code: Integer | None = None
    reason: str = Field("", max_length=1024)
    log_tail: str = Field("", max_length=LOG_TAIL_MAX)
    final: bool = False
    """A failure that running again would only repeat (its walltime was exceeded): not retried."""

    @field_validator("state")
    @classmethod
    def _reportable(cls, value: JobState) -> JobState:
        if value not in (
            JobState.ADMITTED,
            JobState.RUNNING,
            JobState.SUCCEEDED,
            JobState.FAILED,
            JobState.CANCELLED,
            JobState.PENDING,
        ):
            raise ValueError(f"an agent cannot report state {value.value}")
        return value


class ClusterReport(_Strict):
    nodes: list[NodeReport] = Field(default_factory=list, max_length=MAX_NODES_PER_REPORT)
    running: list[RunningJob] = Field(default_factory=list, max_length=MAX_RUNNING_PER_REPORT)
    updates: list[StatusUpdate] = Field(default_factory=list, max_length=MAX_ITEMS_PER_REPORT)
    known: list[tuple[str, Integer]] | None = Field(
        None, description="(job_id, epoch) of every run the agent holds; sent after a restart to reconcile"
    )
    honours: list[str] = Field(default_factory=list, max_length=len(FIELDS))
    """The optional job fields the cluster's backend honours (``federation.capabilities``); an agent that
    says nothing honours none, so it is sent no job that uses one."""
    logs: list[LogChunk] = Field(default_factory=list, max_length=MAX_CHUNKS_PER_REPORT)
    """Its runs' new output lines, within the reply's ``log_limits`` (``federation/joblogs``)."""
    unchanged_since: Integer | None = Field(None, ge=1)
    """The ``revision`` of the federation's last reply: the cluster's nodes, running jobs and honoured
    fields are those of that report, so they are left out (sent empty). A hundred agents each holding
    a thousand runs report every second; what changes between two reports is rarely more than the time."""
    sent_at: float | None = None
    """The agent's clock when it built the report: the federation reads the report's times against it
    (``report_offset``). None (an agent from before it was sent): the times are taken as they are."""


RunningRef = tuple[str, int, float | None]
"""A job a cluster runs, as the scheduler needs it: (job id, epoch, expected end)."""


def running_refs(time: float, report: ReportFacts) -> list[RunningRef]:
    """``report``'s running jobs as it arrived at ``time``, their ends on the federation's clock."""
    offset = report_offset(report, time)
    return [(r.job_id, r.epoch, None if r.expected_end is None else r.expected_end + offset) for r in report.running]


class LatestReport(_Strict):
    """``reports/<name>``: what the scheduler plans with from a cluster's last report. Per running job
    only (id, epoch, expected end): the full entries of a cluster running 12,000 jobs were more than
    one etcd request may carry (1.5 MiB), and this is parsed on every report by every replica."""

    time: float
    nodes: list[NodeReport]
    running: list[RunningRef] = Field(max_length=MAX_RUNNING_PER_REPORT)
    honours: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, time: float, report: ClusterReport) -> LatestReport:
        """``report`` as it arrived at ``time`` (``running_refs``)."""
        running = running_refs(time, report)
        return cls.model_construct(time=time, nodes=report.nodes, running=running, honours=report.honours)

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> LatestReport:
        return cls.model_validate_json(value)


class ClusterShape(_Strict):
    """``shapes/<name>``: what a submit is judged on (``federation/api/admission.py``): the cluster's node
    kinds, idle, and the job fields it honours. Written only when they change, so a submit reads a few hundred
    bytes per cluster rather than every run of every cluster's last report, which a hundred agents rewrite
    every second."""

    nodes: list[NodeReport]
    honours: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, report: ClusterReport) -> ClusterShape:
        nodes = [
            NodeReport.model_construct(
                name=f"kind-{i}", count=count, allocatable=dict(size), free=dict(size), labels=dict(labels)
            )
            for i, ((size, labels), count) in enumerate(sorted(node_kinds(report.nodes).items()))
        ]
        return cls.model_construct(nodes=nodes, honours=sorted(report.honours))

    def as_report(self) -> LatestReport:
        """As a report of the cluster idle, for ``FederationState.never_fits``."""
        return LatestReport.model_construct(time=0.0, nodes=self.nodes, running=[], honours=self.honours)

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> ClusterShape:
        return cls.model_validate_json(value)


class Assignment(_Strict):
    job_id: str
    epoch: int
    name: str
    tenant: str
    queue: str
    priority: int
    submit_time: float
    spec: JobSpecBody

    @classmethod
    def of(cls, record: JobRecord) -> Assignment:
        """The assignment for a dispatched record (validated: faster than model_construct, which is
        pure Python, and the spec, already a model, is taken as it is)."""
        return cls(
            job_id=record.id,
            epoch=record.epoch,
            name=record.name,
            tenant=record.tenant,
            queue=record.queue,
            priority=record.priority,
            submit_time=record.submit_time,
            spec=record.spec,
        )


class Cancellation(_Strict):
    job_id: str
    epoch: int
    reason: str


class ReportReply(_Strict):
    assignments: list[Assignment] = Field(default_factory=list)
    cancellations: list[Cancellation] = Field(default_factory=list)
    refused: list[dict[str, Any]] = Field(default_factory=list)
    state: ClusterState = ClusterState.READY
    lease: float | None = Field(None, gt=0)
    """The federation's ``cluster.lostAfter``: how long the agent may keep its runs without a reply
    (its job lease); past it the agent stops them, as the federation requeues them at ``requeueAfter``."""
    log_acks: list[LogAck] = Field(default_factory=list)
    log_limits: LogLimits | None = None
    """None: this federation takes no output (the simulator's), so the agent ships none."""
    revision: int | None = None
    """The store's revision of this cluster's report as the federation holds it: a next report with
    nothing new but its time names it (``unchanged_since``); None: send the next one whole."""


class JoinRequest(_Strict):
    token: str = Field(min_length=1, max_length=256)
    name: str = Field(min_length=1, max_length=63)
    backend: str = Field("simulated", max_length=32)
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        refused = refuses_labels(value)
        if refused:
            raise ValueError(refused)
        return _check_labels(value, "cluster label")


class ClusterRecord(BaseModel):
    """``clusters/<name>``: identity and admin state; capacity lives in the latest report."""

    model_config = ConfigDict(extra="ignore")

    name: str
    backend: str = "simulated"
    labels: dict[str, str] = Field(default_factory=dict)
    joined_at: float
    cordoned: bool = False
    grant: ClusterGrant = Field(default_factory=ClusterGrant)
