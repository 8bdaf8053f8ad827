"""PNG plots of a simulation: utilization, per-tenant share against fair share, and waits.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend), so plotting
works headless and from threads. Every plot is ``PLOT_SIZE_PX`` pixels. Time series are averages over
``bins`` equal slices of the span from the first submit to the last end: a raw step per job event is
unreadable at 10^5 jobs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from federation.simulator.metrics import dominant_share
from federation.simulator.records import JobOutcome

FIGSIZE_IN = (10.0, 5.0)
DPI = 100
PLOT_SIZE_PX = (int(FIGSIZE_IN[0] * DPI), int(FIGSIZE_IN[1] * DPI))  # (width, height)
DEFAULT_BINS = 200
TOP_TENANTS = 8  # tenants drawn one by one; the rest are summed as OTHERS
OTHERS = "(other tenants)"  # parenthesised so that no tenant name can collide with it

Interval = tuple[float, float, float]  # (start, end, amount)


def plot_utilization(
    records: Iterable[JobOutcome], capacity: Mapping[str, float], path: str | Path, bins: int = DEFAULT_BINS
) -> None:
    """Percent of each capacity resource in use over time, with its mean over the whole span."""
    ran = _runs(records)
    edges, scale, unit = _time_axis(ran, bins)
    fig, ax = _figure()
    for res, cap in sorted(capacity.items()):
        if cap <= 0:
            continue
        used = binned_integral([(r.start, r.end, r.resources.get(res, 0.0)) for r in ran], edges)
        pct = [100 * u / (cap * (hi - lo)) for u, lo, hi in zip(used, edges, edges[1:], strict=False)]
        line = ax.stairs(pct, [e / scale for e in edges], label=f"{res} (capacity {cap:g})")
        mean = 100 * sum(used) / (cap * (edges[-1] - edges[0]))
        ax.axhline(mean, linestyle="--", linewidth=1, color=line.get_edgecolor(), label=f"{res} mean {mean:.1f}%")
    ax.set(
        title="Federation utilization over time",
        xlabel=f"time since scenario start ({unit})",
        ylabel="resources in use (%)",
        ylim=(0, 105),
    )
    ax.legend(loc="lower right")
    _save(fig, path)


def plot_tenant_shares(
    records: Iterable[JobOutcome],
    fair_shares: Mapping[str, float],
    path: str | Path,
    capacity: Mapping[str, float] | None = None,
    bins: int = DEFAULT_BINS,
) -> None:
    """Each tenant's share of the usage in each time slice (solid) against its fair share (dashed).

    Usage is dominant-share-seconds as in metrics (``capacity`` defaults to the peak of concurrent
    use per resource); ``fair_shares`` are fractions of the federation, and a tenant without one gets
    no dashed line. The ``TOP_TENANTS`` biggest users are drawn one by one, the rest summed as one line.
    """
    ran = _runs(records)
    cap = dict(capacity) if capacity is not None else _peak_use(ran)
    edges, scale, unit = _time_axis(ran, bins)
    usage: dict[str, list[Interval]] = {}
    for r in ran:
        usage.setdefault(r.tenant, []).append((r.start, r.end, dominant_share(r.resources, cap)))
    per_tenant = {t: binned_integral(iv, edges) for t, iv in usage.items()}
    ranked = sorted(per_tenant, key=lambda t: (-sum(per_tenant[t]), t))
    shown = ranked[:TOP_TENANTS]
    if len(ranked) > TOP_TENANTS:
        per_tenant[OTHERS] = [sum(per_tenant[t][b] for t in ranked[TOP_TENANTS:]) for b in range(bins)]
        shown.append(OTHERS)
    totals = [sum(per_tenant[t][b] for t in ranked) for b in range(bins)]
    fig, ax = _figure()
    x = [e / scale for e in edges]
    for tenant in shown:
        share = [100 * u / tot if tot > 0 else math.nan for u, tot in zip(per_tenant[tenant], totals, strict=True)]
        line = ax.stairs(share, x, label=tenant)
        if tenant in fair_shares:
            ax.axhline(100 * fair_shares[tenant], linestyle="--", linewidth=1, color=line.get_edgecolor())
    ax.set(
        title="Per-tenant share of used resources (dashed: fair share)",
        xlabel=f"time since scenario start ({unit})",
        ylabel="share of usage in the slice (%)",
        ylim=(0, 105),
    )
    ax.legend(loc="upper right", fontsize="small", ncols=2)
    _save(fig, path)


def plot_waits(records: Iterable[JobOutcome], path: str | Path, bins: int = DEFAULT_BINS) -> None:
    """Left: the distribution of waits (CDF, log scale). Right: mean wait by submit time."""
    started = [(r.submit, r.start) for r in records if r.start is not None]
    if not started:
        raise ValueError("no job started: there are no waits to plot")
    waits = sorted(start - submit for submit, start in started)
    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    floor = 1.0  # a log axis has no zero: waits under one second are drawn at one second
    left.step([max(w, floor) for w in waits], [100 * (i + 1) / len(waits) for i in range(len(waits))], where="post")
    left.set(
        xscale="log",
        title="Wait time distribution",
        xlabel="wait (s, log scale; < 1 s shown at 1 s)",
        ylabel="jobs waiting at most this long (%)",
        ylim=(0, 101),
    )
    left.grid(True, which="major", alpha=0.3)
    lo, hi = min(submit for submit, _ in started), max(submit for submit, _ in started)
    scale, unit = _time_unit(hi - lo)
    width = (hi - lo) / bins or 1.0
    sums, counts = [0.0] * bins, [0] * bins
    for submit, start in started:
        b = min(int((submit - lo) / width), bins - 1)
        sums[b] += start - submit
        counts[b] += 1
    edges = [(lo + i * width) / scale for i in range(bins + 1)]
    right.stairs([s / c / 3600 if c else math.nan for s, c in zip(sums, counts, strict=True)], edges)
    right.set(
        title="Mean wait of the jobs submitted in each slice",
        xlabel=f"submit time since scenario start ({unit})",
        ylabel="mean wait (h)",
    )
    fig.tight_layout()
    _save(fig, path)


class _Run(NamedTuple):
    """A record that ran: start and end are known."""

    submit: float
    start: float
    end: float
    tenant: str
    resources: Mapping[str, float]


def _runs(records: Iterable[JobOutcome]) -> list[_Run]:
    runs = [
        _Run(r.submit, r.start, r.end, r.tenant, r.resources)
        for r in records
        if r.start is not None and r.end is not None
    ]
    if not runs:
        raise ValueError("no job ran: there is nothing to plot")
    return runs


def _time_axis(ran: Sequence[_Run], bins: int) -> tuple[list[float], float, str]:
    """Bin edges over [first submit, last end], and the unit to label them in."""
    if bins <= 0:
        raise ValueError(f"bins must be positive, got {bins}")
    lo = min(r.submit for r in ran)
    hi = max(max(r.end for r in ran), lo + 1.0)
    scale, unit = _time_unit(hi - lo)
    return [lo + (hi - lo) * i / bins for i in range(bins + 1)], scale, unit


def _time_unit(span: float) -> tuple[float, str]:
    if span >= 3 * 86400:
        return 86400.0, "days"
    if span >= 2 * 3600:
        return 3600.0, "hours"
    return 1.0, "seconds"


def binned_integral(intervals: Sequence[Interval], edges: Sequence[float]) -> list[float]:
    """For each bin, the integral over it of the summed amounts of the intervals covering each instant."""
    events = sorted([(s, a) for s, _, a in intervals] + [(e, -a) for _, e, a in intervals])
    out = [0.0] * (len(edges) - 1)
    level, t, i = 0.0, edges[0], 0
    for b, hi in enumerate(edges[1:]):
        area = 0.0
        while i < len(events) and events[i][0] < hi:
            when, delta = events[i]
            if when > t:
                area += level * (when - t)
                t = when
            level += delta
            i += 1
        out[b] = area + level * (hi - t)
        t = hi
    return out


def _peak_use(ran: Sequence[_Run]) -> dict[str, float]:
    """Peak concurrent use per resource: a stand-in capacity when the caller has none."""
    peaks: dict[str, float] = {}
    names = {res for r in ran for res in r.resources}
    for res in names:
        level = peak = 0.0
        for _, delta in sorted(
            [(r.start, r.resources.get(res, 0.0)) for r in ran] + [(r.end, -r.resources.get(res, 0.0)) for r in ran]
        ):
            level += delta
            peak = max(peak, level)
        peaks[res] = peak
    return peaks


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _save(fig: Figure, path: str | Path) -> None:
    fig.savefig(path, dpi=DPI, format="png")
