"""One simulation end to end: run a scenario, then write jobs.csv, events.csv, tasks.csv, metrics.json and
(optionally) the plots."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from federation.collector import keep_long_lived
from federation.config import FederationConfig
from federation.models import QueueTree
from federation.simulator.choices import POLICIES
from federation.simulator.engine import Progress, simulate
from federation.simulator.entitlement import fair_shares
from federation.simulator.metrics import Metrics, compute_metrics
from federation.simulator.output import write_events_csv, write_jobs_csv, write_metrics_json, write_tasks_csv
from federation.simulator.records import SimulationResult
from federation.simulator.scenario import Scenario

JOBS_CSV = "jobs.csv"
METRICS_JSON = "metrics.json"
EVENTS_CSV = "events.csv"
TASKS_CSV = "tasks.csv"
PLOTS = ("utilization.png", "tenant_shares.png", "waits.png")


@dataclass
class Run:
    result: SimulationResult
    metrics: Metrics
    files: list[Path]


def with_policy(config: FederationConfig, policy: str) -> FederationConfig:
    """``fcfs``: strict order (nothing jumps the head); ``easy``: one reservation and backfill;
    ``conservative``: a reservation for every waiting job, and backfill."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}: choose one of {', '.join(POLICIES)}")
    out = config.model_copy(deep=True)
    out.backfill = policy != "fcfs"
    out.reservation.depth = "all" if policy == "conservative" else 1
    return out


def run_scenario(
    scenario: Scenario, output_dir: str | Path, *, plot: bool = False, progress: Progress | None = None
) -> Run:
    """Simulate and write the results into ``output_dir`` (created if missing)."""
    keep_long_lived()  # the scenario stays to the end, and the run's jobs pile up beside it
    result = simulate(scenario, progress=progress)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / JOBS_CSV, out / METRICS_JSON, out / EVENTS_CSV, out / TASKS_CSV]
    write_jobs_csv(result.records, files[0])
    write_events_csv(result.events, files[2])
    write_tasks_csv(result.tasks, files[3])
    shares = fair_shares(
        QueueTree(scenario.queues), ((r.tenant, r.queue) for r in result.records if r.state != "Rejected")
    )
    if any(shares.get(r.tenant, 0.0) <= 0 for r in result.records):
        shares = {}  # a tenant with no accepted job has no target: compare everyone against equal shares
    metrics = compute_metrics(result.records, result.capacity, shares or None)
    write_metrics_json(metrics, files[1])
    if plot and any(r.start is not None and r.end is not None for r in result.records):
        from federation.simulator.plots import plot_tenant_shares, plot_utilization, plot_waits  # matplotlib: ~0.5 s

        paths = [out / name for name in PLOTS]
        plot_utilization(result.records, result.capacity, paths[0])
        plot_tenant_shares(result.records, shares or _equal(result), paths[1], result.capacity)
        plot_waits(result.records, paths[2])
        files += paths
    return Run(result, metrics, files)


def _equal(result: SimulationResult) -> dict[str, float]:
    tenants = sorted({r.tenant for r in result.records})
    return {t: 1.0 / len(tenants) for t in tenants}
