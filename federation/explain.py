"""``fedq explain``: why a job waits, built from what the leader publishes and the job index.

The leader writes its last cycle's reasons, reservations and line under ``sched/status``. The line is
the waiting jobs in the order the cycle took them up (fair share between queues and tenants, then
priority and submit time), so a job's place in it is its true place. A job the cycle did not reach
(or beyond the published part) gets its place in its own queue by priority and submit time from the
index. Any API replica can answer. Times in its text are UTC with how far they are from the API's
clock (the one it judges clusters by); its numbers stay epoch seconds for clients.
"""

from __future__ import annotations

from typing import Any

from federation import capabilities, keys
from federation.clusters import ClusterService
from federation.explain_waits import waiting_on, waits_summary
from federation.index_counts import IndexCounts, line_key
from federation.models import JobRecord, JobState
from federation.store import Store
from federation.waits import StatusCache, wait_of
from policies.format import format_labels, format_when

QUEUED = (JobState.PENDING, JobState.RESERVED, JobState.UNSCHEDULABLE)

POLICY = {
    "fair-share": "fair share: its queue or tenant holds its slice while others wait",
    "overused": "fair share: its queue holds its deserved share while others wait",
    "cap": "its queue's cap",
    "gang": "gang size: fewer than minAvailable tasks fit together",
    "invalid": "gang size: the job can never form its gang",
    "labels": "no cluster matches its clusterSelector",
    "cordoned": "the matching clusters are cordoned or unreachable",
    "too-big": "too big for every cluster",
    "insufficient": "capacity: no matching cluster has room now",
    "reservation": "another job's reservation: starting now would delay it",
    "reserved": "it holds a reservation",
    "preempting": "priority preemption: it waits for the jobs it stops",
    "order": "strict order: behind a blocked job",
    "not-enqueued": "admission: the federation's admission window is full",
    "waiting": "it has not waited long enough to reserve",
}


LINE = "the order the last cycle took waiting jobs up in"
QUEUE_ORDER = "priority and submit time in its queue: not in the last cycle's line"


async def _position(counts: IndexCounts, record: JobRecord, line: list[list[str]]) -> dict[str, Any]:
    """Its place in the last cycle's line if that reached it, else its place in its queue by priority and
    submit time; the lengths are the replica's counts (``IndexCounts``), so this reads one queue's index
    at most."""
    states = [state.value for state in QUEUED]
    counted = await counts.counts([keys.index_prefix(state, q) for q in (None, record.queue) for state in states])
    out: dict[str, Any] = {
        "queue_length": sum(counted[len(states) :]),
        "queued": sum(counted[: len(states)]),
        "reached": len(line),
    }
    ahead_in_queue = 0
    for rank, (job_id, queue) in enumerate(line, 1):
        if job_id == record.id:
            out.update(in_queue=ahead_in_queue + 1, overall=rank, basis=LINE)
            return out
        ahead_in_queue += queue == record.queue
    ahead = await counts.ahead([keys.index_prefix(state, record.queue) for state in states], line_key(record.summary()))
    out.update(in_queue=1 + ahead, overall=None, basis=QUEUE_ORDER)
    return out


async def explain(
    store: Store,
    counts: IndexCounts,
    clusters: ClusterService,
    published: StatusCache,
    record: JobRecord,
    lost_after: float,
    viewer: str | None = None,
) -> dict[str, Any]:
    """Why ``record`` waits, as ``viewer`` may see it: a tenant (None: an admin) sees other tenants'
    reservations without their job ids, as it cannot read those jobs either. ``published``: the leader's
    status, read only for a queued job."""
    out: dict[str, Any] = {"id": record.id, "state": record.state.value, "queue": record.queue, "tenant": record.tenant}
    if not record.state.queued:
        out["summary"] = f"the job is {record.state.value}" + (f" on {record.cluster}" if record.cluster else "")
        return out
    view = await published.get()
    status = view.status
    held_whole = view.held_reason(record.queue, record.tenant)
    raw = view.reasons.get(record.id) or ([] if held_whole is None else [held_whole])
    reasons = [{"code": c, "source": s, "message": m, "policy": POLICY.get(c, c)} for c, s, m in raw]
    reservation = status.get("reservations", {}).get(record.id)
    blocking = [
        _seen_by(viewer, job_id, r) for job_id, r in status.get("reservations", {}).items() if job_id != record.id
    ]
    out["position"] = await _position(counts, record, status.get("line", []))
    out["reasons"] = reasons
    out["reservation"] = reservation
    out["other_reservations"] = blocking
    out["clusters"] = await _matching_clusters(clusters, record, lost_after)
    found = wait_of(record.summary(), view, clusters.clock.now())
    out["wait"] = None if found is None else found.view()
    out["cycle_time"] = status.get("time")
    out["projected_start"] = _projected_start(record, reasons, reservation, out["clusters"])
    out["summary"] = _summary(record, reasons, reservation, out, clusters.clock.now())
    failing = status.get("failing")
    if failing is not None:  # before the plan's reasons: no cycle gets through, whatever the last good one said
        out["scheduler"] = failing
        since = "" if failing["since"] is None else f" since {format_when(failing['since'], clusters.clock.now())}"
        out["summary"] = (
            f"the scheduler's cycles are failing{since} ({failing['failures']} in a row: {failing['error']}): "
            f"nothing starts until they get through again; the last good cycle said: {out['summary']}"
        )
    if record.after:
        out["dependencies"] = await waiting_on(store, record)
        out["summary"] = waits_summary(out["dependencies"]) or out["summary"]
    if record.held_by is not None:  # first: nothing else decides while it is held
        out["held"] = {"by": record.held_by, "at": record.held_at}
        out["projected_start"] = None
        at = "" if record.held_at is None else f" at {format_when(record.held_at, clusters.clock.now())}"
        out["summary"] = (
            f"held by {record.held_by}{at}: it keeps its place in line; `fedq release {record.id}` lets it run"
        )
    return out


def _seen_by(viewer: str | None, job_id: str, reservation: dict[str, Any]) -> dict[str, Any]:
    """Another tenant's reservation without its job id (nor its tenant); an admin sees every field."""
    if viewer is None or reservation.get("tenant") == viewer:
        return {"job": job_id, **reservation}
    return {"job": None, **{k: v for k, v in reservation.items() if k != "tenant"}}


async def _matching_clusters(clusters: ClusterService, record: JobRecord, lost_after: float) -> list[dict[str, Any]]:
    selector = capabilities.selector(record.spec)
    found = []
    for cluster, latest in await clusters.all():
        labels = capabilities.cluster_labels(cluster.labels, latest.honours if latest else ())
        if all(labels.get(k) == v for k, v in selector.items()):
            ends = [end for _, _, end in latest.running if end is not None] if latest else []
            found.append(
                {
                    "name": cluster.name,
                    "state": clusters.state_of(cluster, latest, lost_after).value,
                    "next_end": min(ends) if ends else None,
                }
            )
    return found


def _projected_start(
    record: JobRecord,
    reasons: list[dict[str, Any]],
    reservation: dict[str, Any] | None,
    clusters: list[dict[str, Any]],
) -> dict[str, Any] | None:
    if reservation is not None:
        return {"time": reservation["start"], "basis": "its reservation"}
    if record.state is JobState.UNSCHEDULABLE or any(r["code"] == "preempting" for r in reasons):
        return None  # never, or as soon as its victims have stopped (the summary says so)
    ends = [c["next_end"] for c in clusters if c["state"] == "Ready" and c["next_end"] is not None]
    if ends:
        return {
            "time": min(ends),
            "basis": "earliest expected end of a running job on a matching cluster (a lower bound)",
        }
    return None


def _summary(
    record: JobRecord,
    reasons: list[dict[str, Any]],
    reservation: dict[str, Any] | None,
    out: dict[str, Any],
    now: float,
) -> str:
    if record.state is JobState.UNSCHEDULABLE:
        return f"Unschedulable: {record.reason}"
    preempting = next((r for r in reasons if r["code"] == "preempting"), None)
    if preempting is not None:
        return f"{preempting['message']}: it starts once they have stopped"
    if reservation is not None:
        where = ", ".join(sorted(reservation["clusters"]))  # cluster -> tasks held there (docs/ui.md)
        return f"holds a reservation on {where} from {format_when(reservation['start'], now)}"
    if not out["clusters"]:
        selector = record.spec.cluster_selector
        if not selector:
            return "no cluster has joined"
        return f"no cluster matches its clusterSelector {format_labels(selector)}"
    if not any(c["state"] == "Ready" for c in out["clusters"]):
        states = ", ".join(f"{c['name']} {c['state']}" for c in out["clusters"])
        return f"every matching cluster is unavailable ({states})"
    if reasons:
        first = next((r for r in reasons if r["code"] not in ("insufficient", "reserved")), reasons[0])
        text = f"held by {first['policy']} — {first['message']}"
        if first["code"] == "reservation" and out["other_reservations"]:
            other = out["other_reservations"][0]
            whose = f"job {other['job']}" if other["job"] is not None else "another tenant's job"
            text += f" ({whose} reserved from {format_when(other['start'], now)})"
        return text
    position = out["position"]
    return f"waiting its turn: {position['in_queue']} of {position['queue_length']} in queue {record.queue}"
