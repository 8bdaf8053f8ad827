"""A scenario played on the production scheduler: real etcd, the real ``SchedulerService`` and
``ClusterService``, real member agents on simulated backends, a manual clock (``tests.scheduler.harness``).

The clock jumps from event to event as ``fedq simulate``'s does: a submit, the earliest end a backend
expects, a scenario action, and the moments a plan can change by time alone (a preemptible run
passing reclaim's or preemption's grace, a silent cluster passing ``lostAfter`` or ``requeueAfter``, a job sent to a
silent cluster passing ``admitWithin``, each at the next cycle). At each instant the harness ticks
until no job changes; a scenario's actions (a cancel, a cluster's agent going silent) come after the
instant's reports, then it settles again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from federation.config import FederationConfig
from federation.jobs import expand
from federation.lifecycle import Cancel, JobEvent, dispatched_at
from federation.models import JobManifest, JobRecord, JobState
from policies.units import parse_duration
from tests.conformance.cases import Rows
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

ROUNDS = 8  # ticks at one instant before giving up on it settling (a reclaim needs three)


def _manifest(job: dict[str, Any]) -> JobManifest:
    spec = {
        "queue": job["queue"],
        "walltime": job["walltime"],
        "preemptible": job.get("preemptible", False),
        "clusterSelector": job.get("clusterSelector", {}),
        "tasks": [{**task, "runtime": job["runtime"]} for task in job["tasks"]],
    }
    for key in ("priority", "minAvailable", "placement", "maxRetries"):  # as the scenario gives them
        if key in job:
            spec[key] = job[key]
    return JobManifest.model_validate({"metadata": {"name": job["id"].lower()}, "spec": spec})


@dataclass
class Played:
    harness: Harness
    t0: float
    ids: dict[str, str]  # scenario id -> the store's job id

    async def rows(self) -> Rows:
        rows: Rows = {}
        for sim_id, job_id in self.ids.items():
            record = await self.harness.job(job_id)
            start = "" if record.start_time is None else f"{record.start_time - self.t0:.3f}"
            end = "" if record.end_time is None else f"{record.end_time - self.t0:.3f}"
            rows[sim_id] = {"queue": record.queue, "tenant": record.tenant, "start": start, "end": end}
        return rows

    async def events(self) -> dict[str, list[JobEvent]]:
        return {sim_id: (await self.harness.job(job_id)).events for sim_id, job_id in self.ids.items()}


class _Player:
    def __init__(self, h: Harness, case: dict[str, Any], t0: float) -> None:
        self.h, self.t0 = h, t0
        self.config = FederationConfig.model_validate(case.get("policy", {}))
        self.todo = sorted(case["jobs"], key=lambda j: float(j["submit"]))  # stable: file order within an instant
        self.actions = sorted(case.get("actions", []), key=lambda a: parse_duration(a["at"]))
        self.ids: dict[str, str] = {}
        self.wakes: set[float] = set()

    async def states(self) -> list[tuple[str, int, bool]]:
        records = [await self.h.job(i) for i in self.ids.values()]
        return [(r.state.value, r.attempt, r.cancel_requested) for r in records]

    async def settle(self) -> None:
        before = await self.states()
        for _ in range(ROUNDS):
            await self.h.tick()
            after = await self.states()
            if after == before:
                break
            before = after
        graces, period = (self.config.reclaim.grace, self.config.preemption.grace), self.config.cycle_period
        for job_id in self.ids.values():
            record: JobRecord = await self.h.job(job_id)
            if record.state is JobState.RUNNING and record.spec.preemptible and record.start_time is not None:
                self.wakes |= {record.start_time + grace for grace in graces}
            sent = dispatched_at(record)
            if sent is not None and record.cluster in self.h.silenced:  # it is never admitted there
                self.wakes.add(sent + self.config.cluster.admit_within + period)

    async def act(self, action: dict[str, Any], at: float) -> None:
        if "cancel" in action:
            stored = await self.h.jobs.get(self.ids[action["cancel"]])
            if not stored.record.state.terminal:
                await self.h.jobs.apply(stored, Cancel("scenario"), now=at)
        else:
            self.h.silenced.add(action["silence"])
            cluster, period = self.config.cluster, self.config.cycle_period
            self.wakes |= {at + cluster.lost_after + period, at + cluster.requeue_after + period}

    def next_time(self) -> float | None:
        now = self.h.clock.now()
        times = [t for a in self.h.agents.values() if (t := a.backend.next_event_time()) is not None]
        times += [self.t0 + float(j["submit"]) for j in self.todo[:1]]
        times += [self.t0 + parse_duration(a["at"]) for a in self.actions[:1]]
        times += [t for t in self.wakes if t > now]
        return min(times, default=None)

    async def play(self, until: float) -> None:
        h = self.h
        while (at := self.next_time()) is not None and at <= self.t0 + until:
            h.clock.advance(at - h.clock.now())
            while self.todo and self.t0 + float(self.todo[0]["submit"]) <= at:
                job = self.todo.pop(0)
                records = expand(_manifest(job), job["tenant"], at)
                await h.jobs.create(records)
                self.ids[job["id"]] = records[0].id
            await self.settle()
            if self.actions and self.t0 + parse_duration(self.actions[0]["at"]) <= at:
                while self.actions and self.t0 + parse_duration(self.actions[0]["at"]) <= at:
                    await self.act(self.actions.pop(0), at)
                await self.settle()


async def play(make_harness: HarnessFactory, case: dict[str, Any], until: float, start: float = 0.0) -> Played:
    """Play ``case`` (``fedq simulate``'s scenario schema) on the production scheduler through every
    instant up to ``until`` seconds from its start. ``start`` is the clock's start (the scenario's 0):
    0 by default, so times written into reasons read as the simulator writes them."""
    h: Harness = await make_harness(case.get("policy", {}), {"queues": case["queues"]}, start)
    for cluster in case["clusters"]:
        await h.join(cluster["name"], cluster["nodes"], cluster.get("labels"))
    player = _Player(h, case, start)
    await player.play(until)
    return Played(h, start, player.ids)


async def replay(make_harness: HarnessFactory, case: dict[str, Any], until: float) -> Rows:
    """The case's jobs.csv-shaped rows (queue, tenant, start) after playing it to ``until``."""
    return await (await play(make_harness, case, until)).rows()
