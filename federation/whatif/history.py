"""The federation's own history as a simulator scenario: what ``fedq whatif`` replays.

A window's jobs (submitted from ``since`` to ``until``, finished or not) become scenario jobs whose
times are seconds from ``since``; each runs for as long as its last run really ran (start to end).
What a scenario cannot say is kept beside it, in the document's ``history`` block: what really
happened to each job (its recorded start and end, for the replay's fidelity) and how its runtime was
known (``note``): ``ran`` (start to end), ``running`` (still running at ``until``: the time it has run so
far), ``queued`` or ``cancelled`` before it ever ran (its walltime, or 0 without one). A user's cancel,
hold and release keep their times as scenario actions. The clusters are each joined cluster's last
reported node kinds, the queue tree is the stored one, the policy the federation's scheduling keys.

Finished jobs leave the store ``store.keepFinished`` after they end, so a window reaching further
back than that would replay a history with holes: it is refused (``WindowRemoved``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from federation.config import FederationConfig
from federation.models import JobRecord, JobState, QueueTreeConfig
from federation.models.cluster import ClusterRecord, ClusterShape
from federation.models.dependency import WaitCondition
from federation.store import KeyValue
from member_agent.backends.simulated import EXIT_CODE
from policies.units import format_duration

Note = Literal["ran", "running", "queued", "cancelled"]
SCHEDULING = {
    "cycle_period",
    "dispatch_per_cycle",
    "placement",
    "backfill",
    "fairshare",
    "reservation",
    "cluster",
    "reclaim",
    "preemption",
    "jobs",
}
"""The federation config's keys that decide a replay; the rest (API limits, tokens, logs) do not."""
_CANCELS = ("cancelled by ", "cancel requested by ")  # a person's cancel, queued or on a cluster
_DIGITS = 3  # times are kept to the millisecond


class WindowRemoved(ValueError):
    """The window starts before the oldest history the store still holds."""


class RecordedJob(BaseModel):
    """What really happened to one exported job; times in seconds from the window's start."""

    model_config = ConfigDict(extra="forbid")

    state: JobState
    note: Note
    start: float | None = None
    end: float | None = None
    cluster: str = ""
    preemptions: int = 0


class History(BaseModel):
    """The export's side table: the window (Unix seconds; ``since`` is the scenario's time 0) and the
    recorded outcome of every exported job, by its scenario id (the job's id)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    since: float
    until: float
    keep_finished: float = Field(alias="keepFinished")
    left_out: int = Field(0, alias="leftOut")
    """Jobs submitted before ``since`` still unfinished then: they held capacity the replay does not see."""
    dropped_dependencies: int = Field(0, alias="droppedDependencies")
    """Dependencies on jobs outside the window: the replay counts them as met."""
    jobs: dict[str, RecordedJob] = Field(default_factory=dict)


class HistoryExport(BaseModel):
    """The export as the API answers it: a scenario (``docs/simulator.md``'s schema) and its ``history``."""

    clusters: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    policy: dict[str, Any]
    jobs: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    history: History


@dataclass(slots=True)
class Exported:
    """One record's part of the export, made in a worker thread a page at a time."""

    id: str
    submit: float
    entry: dict[str, Any]
    recorded: RecordedJob
    actions: list[dict[str, Any]]
    after: list[tuple[str, WaitCondition]]  # (job id, condition) for each job it waits for


@dataclass(slots=True)
class Page:
    jobs: list[Exported] = field(default_factory=list)
    left_out: int = 0


def horizon(now: float, keep_finished: float) -> float:
    """The oldest moment from which every job's record is still kept."""
    return now - keep_finished


def check_window(since: float, until: float, keep_finished: float) -> None:
    """Refuse a window that starts before ``horizon`` (records removed) or does not start before its end."""
    if since >= until:
        raise ValueError(f"the window must start before now ({_ago(since, until)})")
    oldest = horizon(until, keep_finished)
    if since < oldest:
        raise WindowRemoved(
            f"the window starts {_ago(since, until)} but finished jobs are removed "
            f"{format_duration(keep_finished)} after they end (store.keepFinished): the history goes back to "
            f"{_ago(oldest, until)} at most; ask for since={format_duration(keep_finished)} or less, or raise "
            "store.keepFinished to keep more"
        )


def _ago(moment: float, now: float) -> str:
    return f"{format_duration(now - moment)} ago" if moment < now else "now or later"


def export_page(kvs: list[KeyValue], since: float, until: float) -> Page:
    """The page's records in the window, exported; those submitted before it and unfinished at its start
    are counted as left out."""
    page = Page()
    for kv in kvs:
        record = JobRecord.from_bytes(kv.value)
        if since <= record.submit_time <= until:
            page.jobs.append(exported(record, since, until))
        elif record.submit_time < since and (record.end_time is None or record.end_time > since):
            page.left_out += 1
    return page


def exported(record: JobRecord, since: float, until: float) -> Exported:
    def at(moment: float) -> float:
        return round(moment - since, _DIGITS)

    spec = record.spec
    submit = at(record.submit_time)
    start, end = record.start_time, record.end_time
    walltime = spec.walltime or 0.0
    note: Note
    if start is not None:
        note, runtime = ("ran", end - start) if end is not None else ("running", until - start)
    else:
        note, runtime = ("cancelled" if record.state is JobState.CANCELLED else "queued"), walltime
    held, actions = _actions(record, at)
    failed = record.state is JobState.FAILED and bool(record.exit_code)
    entry: dict[str, Any] = {
        "id": record.id,
        "tenant": record.tenant,
        "queue": record.queue,
        "submit": submit,
        "runtime": round(max(runtime, 0.0), _DIGITS),
        "priority": record.priority,
        "preemptible": spec.preemptible,
        "placement": spec.placement,
        "tasks": [
            {
                "name": task.name,
                "replicas": task.replicas,
                "resources": dict(task.resources),
                # the last run failed with its code: so does the replay's, and it is not retried again
                **({"env": {EXIT_CODE: str(record.exit_code)}} if failed else {}),
            }
            for task in spec.tasks
        ],
    }
    optional = {
        "walltime": spec.walltime,
        "minAvailable": spec.min_available,
        "clusterSelector": dict(spec.cluster_selector) or None,
        "maxRetries": 0 if failed else spec.max_retries,
        "hold": held or None,
    }
    entry.update({key: value for key, value in optional.items() if value is not None})
    recorded = RecordedJob(
        state=record.state,
        note=note,
        start=None if start is None else at(start),
        end=None if end is None or start is None else at(end),
        cluster=record.cluster if start is not None else "",
        preemptions=record.preemptions,
    )
    after = [(target, wait.condition) for wait in record.after for target in wait.targets()]
    return Exported(record.id, submit, entry, recorded, actions, after)


def _actions(record: JobRecord, at: Any) -> tuple[bool, list[dict[str, Any]]]:
    """A person's cancel, holds and releases from the job's history, as scenario actions; a hold at its
    submit is the job's ``hold: true`` (it is held before any cycle sees it)."""
    held, actions = False, []
    cancelled = False
    for event in record.events:
        reason = event.reason
        if reason.startswith(_CANCELS) and not cancelled:
            cancelled = True
            actions.append({"at": max(at(event.time), at(record.submit_time)), "cancel": record.id})
        elif reason.startswith("held by "):
            if event.time <= record.submit_time:
                held = True
            else:
                actions.append({"at": at(event.time), "hold": record.id})
        elif reason.startswith("released by "):
            actions.append({"at": at(event.time), "release": record.id})
    return held, actions


def cluster_entries(clusters: list[tuple[ClusterRecord, ClusterShape | None]]) -> list[dict[str, Any]]:
    """Each joined cluster that has reported, as a scenario cluster: its labels and node kinds."""
    out = []
    for record, shape in sorted(clusters, key=lambda pair: pair[0].name):
        if shape is None or not shape.nodes:
            continue
        nodes = [_group(node.count, node.allocatable, node.labels) for node in shape.nodes]
        out.append({"name": record.name, **({"labels": record.labels} if record.labels else {}), "nodes": nodes})
    return out


def _group(count: int, resources: dict[str, float], labels: dict[str, str]) -> dict[str, Any]:
    return {"count": count, "resources": dict(resources)} | ({"labels": dict(labels)} if labels else {})


def policy_of(config: FederationConfig) -> dict[str, Any]:
    """The federation config's scheduling keys, as a scenario's ``policy``."""
    return config.model_dump(mode="json", by_alias=True, include=SCHEDULING)


def scenario_document(
    pages: list[Page],
    clusters: list[dict[str, Any]],
    queues: QueueTreeConfig,
    config: FederationConfig,
    since: float,
    until: float,
) -> dict[str, Any]:
    """The scenario (``federation.simulator.scenario``'s YAML schema) with its ``history`` block."""
    jobs = sorted((job for page in pages for job in page.jobs), key=lambda job: (job.submit, job.id))
    known = {job.id for job in jobs}
    dropped = 0
    entries, actions = [], []
    for job in jobs:
        waits = [{"job": target, "condition": condition} for target, condition in job.after if target in known]
        dropped += len(job.after) - len(waits)
        entries.append({**job.entry, **({"dependsOn": waits} if waits else {})})
        actions.extend(job.actions)
    history = History(
        since=since,
        until=until,
        keep_finished=config.store.keep_finished,
        left_out=sum(page.left_out for page in pages),
        dropped_dependencies=dropped,
        jobs={job.id: job.recorded for job in jobs},
    )
    return {
        "clusters": clusters,
        "queues": queues.model_dump(mode="json", by_alias=True, exclude_defaults=True)["queues"],
        "policy": policy_of(config),
        "jobs": entries,
        "actions": sorted(actions, key=lambda action: action["at"]),
        "history": history.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    }
