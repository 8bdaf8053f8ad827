"""Summary metrics of a simulation, computed from job records alone.

Definitions (each one is what a number in metrics.json means):
- wait = start - submit, over jobs that started (any state); ``p95_wait`` uses the nearest-rank
  percentile: the value at rank ceil(p/100 * n) of the sorted waits, so it is always an observed wait.
- bounded slowdown = max(1, (wait + run) / max(run, 10 s)), over completed jobs (Succeeded or Failed
  with a start and an end), the standard tau = 10 s of Feitelson et al.
- capacity[r] = the federation's total of resource r (the sum over clusters), what utilization and
  usage shares are measured against (the dashboard redraws the plots from it and jobs.csv).
- a job's resource-seconds: what its last run's tasks held, each task's resources times its own run
  (tasks.csv; an elastic job's tasks start as room allows); without task runs, resources[r] * (end -
  start).
- utilization[r] = sum over jobs of resource-seconds[r], divided by capacity[r] * span, with
  span = makespan = last end - first submit.
- a job's usage is its dominant-share-seconds: max over r of resource-seconds[r] / capacity[r]
  (DRF's dominant share; with CPU only it is CPU-seconds / total CPUs). A tenant's ``usage_share`` is
  its usage over everyone's.
- jain_fairness = (sum x)^2 / (n * sum x^2) over the n tenants that submitted jobs, with
  x = usage_share / fair_share: 1.0 when every tenant got usage in proportion to its fair share, 1/n
  when one tenant got everything. Fair shares default to equal; given ones are renormalised over those
  n tenants. It measures outcome, not demand: a tenant that asked for little lowers it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from federation.simulator.records import JobOutcome

SLOWDOWN_TAU = 10.0  # seconds: runs shorter than this count as this long in bounded slowdown
WAIT_PERCENTILE = 95.0


class TenantMetrics(TypedDict):
    jobs: int
    completed: int
    mean_wait: float | None
    p95_wait: float | None
    usage_share: float | None
    fair_share: float


class Metrics(TypedDict):
    jobs: int
    started: int
    completed: int
    failed: int
    cancelled: int
    rejected: int
    unschedulable: int
    mean_wait: float | None
    p95_wait: float | None
    max_wait: float | None
    mean_bounded_slowdown: float | None
    makespan: float | None
    capacity: dict[str, float]
    utilization: dict[str, float | None]
    jain_fairness: float | None
    tenants: dict[str, TenantMetrics]


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: the smallest observed value with at least p% of the values <= it."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    ordered = sorted(values)
    rank = math.ceil(p * len(ordered) / 100)
    return ordered[max(rank, 1) - 1]


def bounded_slowdown(wait: float, run: float, tau: float = SLOWDOWN_TAU) -> float:
    """max(1, (wait + run) / max(run, tau)): slowdown that very short jobs cannot blow up."""
    return max(1.0, (wait + run) / max(run, tau))


def dominant_share(resources: Mapping[str, float], capacity: Mapping[str, float]) -> float:
    """The largest fraction of any capacity resource that ``resources`` takes (0 when none is counted)."""
    return max((q / capacity[r] for r, q in resources.items() if capacity.get(r, 0) > 0), default=0.0)


def compute_metrics(
    records: Iterable[JobOutcome],
    capacity: Mapping[str, float],
    fair_shares: Mapping[str, float] | None = None,
) -> Metrics:
    """Every metric of the module docstring; None where its population is empty.

    ``capacity`` is the federation's total per resource (the sum over clusters); resources a record
    uses that are not in it are not counted. ``fair_shares`` maps tenant to target share.
    """
    jobs = list(records)
    tenants, jain = _tenant_table(jobs, capacity, fair_shares)
    waits = [w for w in (r.wait for r in jobs) if w is not None]
    completed = [r for r in jobs if r.completed]
    ends = [r.end for r in jobs if r.end is not None]
    span = max(ends) - min(r.submit for r in jobs) if ends else None
    used = {r: 0.0 for r in capacity}
    for job in jobs:
        for res, held in job.resource_seconds().items():
            if res in used:
                used[res] += held
    return Metrics(
        jobs=len(jobs),
        started=len(waits),
        completed=len(completed),
        failed=sum(r.state == "Failed" for r in jobs),
        cancelled=sum(r.state == "Cancelled" for r in jobs),
        rejected=sum(r.state == "Rejected" for r in jobs),
        unschedulable=sum(r.state == "Unschedulable" for r in jobs),
        mean_wait=_mean(waits),
        p95_wait=percentile(waits, WAIT_PERCENTILE) if waits else None,
        max_wait=max(waits, default=None),
        mean_bounded_slowdown=_mean(
            [
                bounded_slowdown(w, run)
                for r in completed
                if (w := r.wait) is not None and (run := r.runtime) is not None
            ]
        ),
        makespan=span,
        capacity=dict(sorted(capacity.items())),
        utilization={r: used[r] / (cap * span) if span and cap > 0 else None for r, cap in sorted(capacity.items())},
        jain_fairness=jain,
        tenants=tenants,
    )


def jain_index(xs: Sequence[float]) -> float | None:
    """(sum x)^2 / (n * sum x^2); None when it is undefined (no values, or all zero)."""
    square_sum = sum(x * x for x in xs)
    if not xs or square_sum == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * square_sum)


def _tenant_table(
    jobs: list[JobOutcome], capacity: Mapping[str, float], fair_shares: Mapping[str, float] | None
) -> tuple[dict[str, TenantMetrics], float | None]:
    """The per-tenant table and Jain's index over it (see the module docstring)."""
    by_tenant: dict[str, list[JobOutcome]] = {}
    for job in jobs:
        by_tenant.setdefault(job.tenant, []).append(job)
    fair = _normalised_fair_shares(sorted(by_tenant), fair_shares)
    usage = {t: sum(dominant_share(r.resource_seconds(), capacity) for r in rs) for t, rs in by_tenant.items()}
    total = sum(usage.values())
    tenants: dict[str, TenantMetrics] = {}
    for name in sorted(by_tenant):
        waits = [w for w in (r.wait for r in by_tenant[name]) if w is not None]
        tenants[name] = TenantMetrics(
            jobs=len(by_tenant[name]),
            completed=sum(r.completed for r in by_tenant[name]),
            mean_wait=_mean(waits),
            p95_wait=percentile(waits, WAIT_PERCENTILE) if waits else None,
            usage_share=usage[name] / total if total > 0 else None,
            fair_share=fair[name],
        )
    jain = jain_index([usage[t] / total / fair[t] for t in sorted(by_tenant)]) if total > 0 else None
    return tenants, jain


def _normalised_fair_shares(tenants: list[str], given: Mapping[str, float] | None) -> dict[str, float]:
    """Fair shares over exactly ``tenants``, summing to 1: equal by default, else ``given`` rescaled."""
    if given is None:
        return {t: 1.0 / len(tenants) for t in tenants}
    missing = [t for t in tenants if given.get(t, 0) <= 0]
    if missing:
        raise ValueError(f"no positive fair share for tenant(s) {', '.join(missing)}")
    total = sum(given[t] for t in tenants)
    return {t: given[t] / total for t in tenants}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
