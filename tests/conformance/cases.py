"""Conformance scenarios as data, run through ``fedq simulate`` (and, for some, the production scheduler).

A case is a scenario mapping in ``fedq simulate``'s schema (clusters, queues, policy, jobs). The helpers
build the usual parts: one cluster of one-cpu nodes, a past user's history job, deep backlogs of
one-cpu jobs. Results are read back from ``jobs.csv`` and counted per queue or tenant.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.simulator.sim_cli import fedq, jobs_csv, scenario_job

DAY = 86_400.0
HOUR = 3_600.0

Rows = dict[str, dict[str, str]]


def cluster(cpus: int, name: str = "c1") -> dict[str, Any]:
    """One member cluster of ``cpus`` one-cpu nodes."""
    return {"name": name, "nodes": [{"count": cpus, "resources": {"cpu": 1}}]}


def job(
    job_id: str, tenant: str, queue: str, submit: float, runtime: float, cpus: int = 1, *, preemptible: bool = False
) -> dict[str, Any]:
    """One job: a gang of ``cpus`` one-cpu tasks (so it needs ``cpus`` nodes), walltime = runtime."""
    return scenario_job(job_id, submit, runtime, cpus, tenant=tenant, queue=queue, preemptible=preemptible)


def backlog(
    prefix: str, tenant: str, queue: str, count: int, at: float, runtime: float = HOUR, *, preemptible: bool = False
) -> list[dict[str, Any]]:
    """``count`` one-cpu jobs submitted together: a deep backlog when count exceeds what may start."""
    return [job(f"{prefix}{i:03d}", tenant, queue, at, runtime, preemptible=preemptible) for i in range(count)]


def scenario(cpus: int, queues: list[dict[str, Any]], jobs: list[dict[str, Any]], **policy: Any) -> dict[str, Any]:
    """A one-cluster scenario; ``policy`` holds federation.yaml keys (half-life 1d unless given)."""
    policy.setdefault("fairshare", {"halfLife": "1d"})
    return {"clusters": [cluster(cpus)], "queues": queues, "policy": policy, "jobs": jobs}


def simulate(case: dict[str, Any], out: Path) -> Rows:
    """Run ``case`` through ``fedq simulate`` and return its jobs.csv rows by job id."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scenario.yaml"
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    assert fedq("simulate", str(path), "--output-dir", str(out / "run"), "-o", "json") == 0
    return jobs_csv(out / "run")


def started_at(rows: Rows, at: float, by: str = "queue") -> Counter[str]:
    """How many jobs started at ``at`` exactly, per queue (or tenant): what one instant's cycles did."""
    return Counter(row[by] for row in rows.values() if row["start"] and abs(float(row["start"]) - at) < 1e-6)


def start(rows: Rows, job_id: str) -> float | None:
    value = rows[job_id]["start"]
    return float(value) if value else None
