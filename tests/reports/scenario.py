"""A small federation with hand-checkable numbers, shared by the report, API and plot tests.

Two hours, 100 cores, weights 1 unit per core. From T0: alice runs 50 cores on east for the whole
two hours; carol 20 cores on east for the first hour; dave 20 cores on west (open queue
scratch.default) throughout; bob 10 cores on west for the second hour, with 20 more pending.
"""

from __future__ import annotations

from typing import Any

from federation.accounting import Accountant
from federation.models import JobRecord, JobSpecBody, JobState, QueueTree, QueueTreeConfig
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


def jobs() -> list[JobRecord]:
    return [
        job("a1", "alice", "research.vision", JobState.RUNNING, T0 - 600, T0, cluster="east", cpu=50),
        job("a2", "alice", "research.vision", JobState.SUCCEEDED, T0, T0 + 60, T0 + 1800, cluster="east"),
        job("a3", "alice", "research.vision", JobState.FAILED, T0 + 100, T0 + 400, T0 + 500, cluster="east"),
        job("b1", "bob", "research.vision", JobState.RUNNING, T0 + 1800, T0 + HOUR, cluster="west", cpu=10),
        job("b2", "bob", "research.vision", JobState.PENDING, T0 + HOUR, cpu=20),
        job("c1", "carol", "research.nlp", JobState.SUCCEEDED, T0 - HOUR, T0, T0 + HOUR, cluster="east", cpu=20),
        job("d1", "dave", "scratch.default", JobState.RUNNING, T0, T0, cluster="west", cpu=20),
    ]


def accountant(clock: ManualClock, half_life: float = 86_400.0) -> Accountant:
    """The accounting of the scenario's runs (a2 and a3 are one-core blips left out of it)."""
    acct = Accountant(clock, half_life, {"cpu": 1.0})
    acct.start("a1", "alice", "research.vision", "east", {"cpu": 50}, at=T0)
    acct.start("c1", "carol", "research.nlp", "east", {"cpu": 20}, at=T0)
    acct.start("d1", "dave", "scratch.default", "west", {"cpu": 20}, at=T0)
    acct.stop("c1", at=T0 + HOUR)
    acct.start("b1", "bob", "research.vision", "west", {"cpu": 10}, at=T0 + HOUR)
    return acct
