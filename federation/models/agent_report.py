"""The agent's report as plain values, and the shape the federation reads a report by.

A report crosses a trust boundary only on the wire: the federation's API validates the body into the
pydantic ``ClusterReport`` (``federation.models.cluster``), whose fields are the protocol's one
definition. Inside an agent, and inside the simulator (no HTTP), a report is built every round with
thousands of entries; pydantic construction there cost more than the scheduling (issue 34), so the agent
builds these plain twins and ``to_wire`` turns them into the JSON body a ``ClusterReport`` dumps to.
``tests/unit/test_agent_report_wire.py`` holds each twin to its model: the same fields, in the same
order, and the same bytes on the wire.

The federation side reads a report through the ``*Facts`` protocols, which both the models and the
twins satisfy: one code path whether the report came over HTTP or from a simulated agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from federation.lifecycle.events import AgentUpdate, RetryPolicy
from federation.models.job import JobState
from federation.models.logs import LogChunk


class NodeFacts(Protocol):
    """One node, or ``count`` identical nodes (``NodeReport``)."""

    @property
    def count(self) -> int: ...
    @property
    def allocatable(self) -> dict[str, float]: ...
    @property
    def free(self) -> dict[str, float]: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def unschedulable(self) -> bool: ...


class RunningFacts(Protocol):
    """A run the cluster holds (``RunningJob``), as the scheduler needs it."""

    @property
    def job_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def expected_end(self) -> float | None: ...


class UpdateFacts(Protocol):
    """A job's state change the agent observed (``StatusUpdate``)."""

    @property
    def job_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def state(self) -> JobState: ...
    @property
    def time(self) -> float: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def reason(self) -> str: ...
    @property
    def log_tail(self) -> str: ...
    @property
    def final(self) -> bool: ...


class ReportFacts(Protocol):
    """A cluster's report (``ClusterReport``), as the federation and the agent's own bookkeeping read it."""

    @property
    def nodes(self) -> Sequence[NodeFacts]: ...
    @property
    def running(self) -> Sequence[RunningFacts]: ...
    @property
    def updates(self) -> Sequence[UpdateFacts]: ...
    @property
    def honours(self) -> Sequence[str]: ...
    @property
    def logs(self) -> Sequence[LogChunk]: ...
    @property
    def unchanged_since(self) -> int | None: ...
    @property
    def sent_at(self) -> float | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainNodeReport:
    """``NodeReport``'s plain twin."""

    name: str
    count: int = 1
    allocatable: dict[str, float]
    free: dict[str, float]
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainRunningJob:
    """``RunningJob``'s plain twin."""

    job_id: str
    epoch: int
    resources: dict[str, float]
    started_at: float | None = None
    expected_end: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainStatusUpdate:
    """``StatusUpdate``'s plain twin."""

    job_id: str
    epoch: int
    state: JobState
    time: float
    exit_code: int | None = None
    reason: str = ""
    log_tail: str = ""
    final: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainClusterReport:
    """``ClusterReport``'s plain twin."""

    nodes: list[PlainNodeReport] = field(default_factory=list)
    running: list[PlainRunningJob] = field(default_factory=list)
    updates: list[PlainStatusUpdate] = field(default_factory=list)
    known: list[tuple[str, int]] | None = None
    honours: list[str] = field(default_factory=list)
    logs: list[LogChunk] = field(default_factory=list)
    unchanged_since: int | None = None
    sent_at: float | None = None


_NAMES: dict[type, tuple[str, ...]] = {}


def _flat(value: Any) -> dict[str, Any]:
    """A twin's fields as a dict, in their order; values as they are (JSON writes a ``JobState`` as its value)."""
    kind = type(value)
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(f.name for f in fields(value))
    return {name: getattr(value, name) for name in names}


def to_wire(report: PlainClusterReport) -> dict[str, Any]:
    """The report's JSON body: what ``ClusterReport.model_dump(mode="json")`` of the same values gives."""
    body = _flat(report)
    body["nodes"] = [_flat(node) for node in report.nodes]
    body["running"] = [_flat(run) for run in report.running]
    body["updates"] = [_flat(update) for update in report.updates]
    body["known"] = None if report.known is None else [list(pair) for pair in report.known]
    body["logs"] = [chunk.model_dump(mode="json") for chunk in report.logs]
    return body


def report_offset(report: ReportFacts, now: float) -> float:
    """What moves a time of ``report`` onto the federation's clock, ``now`` being when it arrived.

    The agent's clock may be hours off ours; what it measures is right, how long before it sent
    the report something happened. So each time becomes that long before the report arrived: a
    run keeps its length and is charged for it, whatever the agent's clock says. Times come out
    late by the report's transit, which the lifecycle bounds to the run's dispatch and now. An agent
    from before ``sent_at`` was sent: its times are taken as they are."""
    return 0.0 if report.sent_at is None else now - report.sent_at


def update_event(update: UpdateFacts, cluster: str, retry: RetryPolicy, offset: float = 0.0) -> AgentUpdate:
    """``update`` as the lifecycle event of ``cluster``'s run, failed runs retried by ``retry``, its time
    on the federation's clock (``offset``: ``report_offset`` of its report)."""
    at = update.time + offset
    return AgentUpdate(
        cluster, update.epoch, update.state, at, update.reason, update.exit_code, update.log_tail, retry, update.final
    )
