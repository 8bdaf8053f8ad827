"""Running ``fedq simulate`` in-process and reading back what it wrote, for the simulator tests."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from federation.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "configs" / "scenarios"
TRACES = ROOT.parent / "shared" / "traces"


def fedq(*argv: str) -> int:
    """``fedq ARGV`` in-process: the console script's own entry point, exit code included."""
    return main(list(argv))


def jobs_csv(directory: Path) -> dict[str, dict[str, str]]:
    """jobs.csv rows by job id."""
    with (directory / "jobs.csv").open(newline="", encoding="utf-8") as handle:
        return {row["id"]: row for row in csv.DictReader(handle)}


def simulate_scenario(name: str, out: Path, *flags: str) -> dict[str, dict[str, str]]:
    """Run configs/scenarios/NAME.yaml through ``fedq simulate`` and return its jobs.csv rows."""
    assert fedq("simulate", str(SCENARIOS / f"{name}.yaml"), "--output-dir", str(out), "-o", "json", *flags) == 0
    return jobs_csv(out)


def starts(rows: dict[str, dict[str, str]]) -> dict[str, float | None]:
    return {job: float(row["start"]) if row["start"] else None for job, row in rows.items()}


def scenario_job(job_id: str, submit: float, runtime: float, cpus: int = 1, **extra: Any) -> dict[str, Any]:
    """One scenario job: a gang of ``cpus`` one-cpu tasks (walltime = runtime unless given)."""
    tenant, queue = extra.pop("tenant", "alice"), extra.pop("queue", "batch")
    return {
        "id": job_id,
        "tenant": tenant,
        "queue": queue,
        "submit": submit,
        "runtime": runtime,
        "walltime": extra.pop("walltime", runtime or 1),
        "tasks": [{"replicas": cpus, "resources": {"cpu": 1}}],
        **extra,
    }
