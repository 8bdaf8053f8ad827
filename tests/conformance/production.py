"""A conformance case played on the production scheduler: real etcd, the real ``SchedulerService``,
real member agents on simulated backends, a manual clock (``tests.scheduler.harness``).

The clock jumps from event to event (a submit, or the earliest end a backend expects) and at each
instant the harness ticks until no job changes state, as ``fedq simulate`` runs rounds until nothing
moves. The result has jobs.csv's shape (queue, tenant, start), so a case's own check reads both.
"""

from __future__ import annotations

from typing import Any

from federation.jobs import expand
from federation.models import JobManifest, JobRecord
from tests.conformance.cases import Rows
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

ROUNDS = 6  # ticks at one instant before giving up on it settling (a reclaim needs three)


def _manifest(job: dict[str, Any]) -> JobManifest:
    return JobManifest.model_validate(
        {
            "metadata": {"name": job["id"].lower()},
            "spec": {
                "queue": job["queue"],
                "walltime": job["walltime"],
                "preemptible": job.get("preemptible", False),
                "tasks": [{**task, "runtime": job["runtime"]} for task in job["tasks"]],
            },
        }
    )


async def _states(h: Harness, ids: list[str]) -> list[tuple[str, int]]:
    return [(r.state.value, r.attempt) for r in [await h.job(i) for i in ids]]


async def replay(make_harness: HarnessFactory, case: dict[str, Any], until: float) -> Rows:
    """Play ``case`` (``fedq simulate``'s scenario schema) on the production scheduler through every
    instant up to ``until`` (seconds from its start), each settled."""
    h: Harness = await make_harness(case.get("policy", {}), {"queues": case["queues"]})
    t0 = h.clock.now()
    for cluster in case["clusters"]:
        await h.join(cluster["name"], cluster["nodes"], cluster.get("labels"))
    todo = sorted(case["jobs"], key=lambda j: float(j["submit"]))  # stable: file order within an instant
    ids: dict[str, str] = {}
    while True:
        ends = [t for a in h.agents.values() if (t := a.backend.next_event_time()) is not None]
        at = min([t0 + float(j["submit"]) for j in todo[:1]] + ends, default=None)
        if at is None or at > t0 + until:
            break
        while todo and t0 + float(todo[0]["submit"]) <= at:
            job = todo.pop(0)
            h.clock.advance(at - h.clock.now())
            records: list[JobRecord] = expand(_manifest(job), job["tenant"], h.clock.now())
            await h.jobs.create(records)
            ids[job["id"]] = records[0].id
        await h.tick(at - h.clock.now())
        before = await _states(h, list(ids.values()))
        for _ in range(ROUNDS):
            await h.tick()
            after = await _states(h, list(ids.values()))
            if after == before:
                break
            before = after
    rows: Rows = {}
    for job in case["jobs"]:
        record = await h.job(ids[job["id"]])
        start = "" if record.start_time is None else f"{record.start_time - t0:.3f}"
        rows[job["id"]] = {"queue": record.queue, "tenant": record.tenant, "start": start}
    return rows
