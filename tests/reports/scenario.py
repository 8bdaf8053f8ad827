"""A small federation with hand-checkable numbers, shared by the report, API and plot tests.

Two hours, 100 cores, weights 1 unit per core. From T0: alice runs 50 cores on east for the whole
two hours; carol 20 cores on east for the first hour; dave 20 cores on west (open queue
scratch.default) throughout; bob 10 cores on west for the second hour, with 20 more pending.
"""

from __future__ import annotations

from typing import Any

from federation.accounting import Accountant
from federation.models import JobRecord, JobSpecBody, JobState, QueueTree, QueueTreeConfig
from federation.reports.facts import JobsRead
from policies.clock import ManualClock

HOUR = 3600.0
T0 = 19_675 * 86_400.0  # a UTC midnight
NOW = T0 + 2 * HOUR
CAPACITY = {"cpu": 100.0}

QUEUES: dict[str, Any] = {
    "queues": [
        {
            "name": "research",
            "guarantee": {"cpu": 60},
            "cap": {"cpu": 90},
            "children": [
                {"name": "vision", "guarantee": {"cpu": 40}, "cap": {"cpu": 80}, "tenants": ["alice", "bob"]},
                {"name": "nlp", "guarantee": {"cpu": 20}, "tenants": ["carol"]},
            ],
        },
        {"name": "scratch", "children": [{"name": "default"}]},
    ]
}


def tree() -> QueueTree:
    return QueueTree(QueueTreeConfig.model_validate(QUEUES))


def job(
    job_id: str,
    tenant: str,
    queue: str,
    state: JobState,
    submit: float,
    start: float | None = None,
    end: float | None = None,
    cluster: str = "",
    cpu: float = 1.0,
) -> JobRecord:
    return JobRecord(
        id=job_id,
        name=job_id,
        tenant=tenant,
        queue=queue,
        spec=JobSpecBody.model_validate({"queue": queue, "tasks": [{"resources": {"cpu": cpu}}]}),
        submit_time=submit,
        state=state,
        start_time=start,
        end_time=end,
        cluster=cluster,
    )


def jobs(t0: float = T0) -> list[JobRecord]:
    """The scenario's job records, with times counted from ``t0``."""
    return [
        job("a1", "alice", "research.vision", JobState.RUNNING, t0 - 600, t0, cluster="east", cpu=50),
        job("a2", "alice", "research.vision", JobState.SUCCEEDED, t0, t0 + 60, t0 + 1800, cluster="east"),
        job("a3", "alice", "research.vision", JobState.FAILED, t0 + 100, t0 + 400, t0 + 500, cluster="east"),
        job("b1", "bob", "research.vision", JobState.RUNNING, t0 + 1800, t0 + HOUR, cluster="west", cpu=10),
        job("b2", "bob", "research.vision", JobState.PENDING, t0 + HOUR, cpu=20),
        job("c1", "carol", "research.nlp", JobState.SUCCEEDED, t0 - HOUR, t0, t0 + HOUR, cluster="east", cpu=20),
        job("d1", "dave", "scratch.default", JobState.RUNNING, t0, t0, cluster="west", cpu=20),
    ]


def facts(t0: float = T0) -> JobsRead:
    """What a report reads of the scenario's jobs."""
    return JobsRead.of(jobs(t0))


def accountant(clock: ManualClock, half_life: float = 86_400.0, t0: float = T0) -> Accountant:
    """The accounting of the scenario's runs from ``t0`` (a2 and a3 are one-core blips left out of it)."""
    acct = Accountant(clock, half_life, {"cpu": 1.0})
    acct.start("a1", "alice", "research.vision", "east", {"cpu": 50}, at=t0)
    acct.start("c1", "carol", "research.nlp", "east", {"cpu": 20}, at=t0)
    acct.start("d1", "dave", "scratch.default", "west", {"cpu": 20}, at=t0)
    acct.stop("c1", at=t0 + HOUR)
    acct.start("b1", "bob", "research.vision", "west", {"cpu": 10}, at=t0 + HOUR)
    return acct
