"""The quota plot: each tenant's usage over the window against its fair share, readable on its own.

Top: what each tenant used, stacked, as average weighted units (cores, with the default weights)
per time bin. Bottom: each tenant's share of the federation's usage per bin (solid) against its
fair share as it was at each bin edge (dashed, same colour; ``UsageSeries.fair_share``). Drawn on
matplotlib's Agg canvas (no pyplot state).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from federation.reports.models import UsageSeries
from federation.simulator.plots import OTHERS, TOP_TENANTS

FIGSIZE_IN = (10.0, 7.0)
DPI = 100
PLOT_SIZE_PX = (int(FIGSIZE_IN[0] * DPI), int(FIGSIZE_IN[1] * DPI))  # (width, height)


def plot_quota(series: UsageSeries, path: str | Path, title: str = "Usage against fair share") -> None:
    """Write the PNG of a report's series (its ``fair_share`` are fractions, 0-1, at each edge)."""
    if len(series.edges) < 2:
        raise ValueError("the usage series has no time bins: ask the report for bins > 0")
    bins = len(series.edges) - 1
    ranked = sorted(series.tenants, key=lambda t: (-sum(series.tenants[t]), t))
    shown = {t: series.tenants[t] for t in ranked[:TOP_TENANTS]}
    fair = {t: [100 * share for share in series.fair_share[t]] for t in shown if t in series.fair_share}
    if len(ranked) > TOP_TENANTS:
        rest = ranked[TOP_TENANTS:]
        shown[OTHERS] = [sum(series.tenants[t][b] for t in rest) for b in range(bins)]
        fair[OTHERS] = [
            100 * sum(series.fair_share.get(t, [0.0] * (bins + 1))[e] for t in rest) for e in range(bins + 1)
        ]
    widths = [hi - lo for lo, hi in zip(series.edges, series.edges[1:], strict=False)]
    x = [datetime.fromtimestamp(edge, UTC) for edge in series.edges]

    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    base = [0.0] * bins
    colors: dict[str, str] = {}
    for tenant, used in shown.items():
        level = [b + u / w for b, u, w in zip(base, used, widths, strict=True)]
        patch = top.stairs(level, x, baseline=base, fill=True, alpha=0.7, label=tenant)
        colors[tenant] = patch.get_facecolor()
        base = level
    top.set(title=title, ylabel="in use (avg units)")
    top.grid(True, alpha=0.3)
    top.legend(loc="upper left", fontsize="small", ncols=3)

    for tenant, used in shown.items():
        share = [100 * u / tot if tot > 0 else math.nan for u, tot in zip(used, series.total, strict=True)]
        bottom.stairs(share, x, baseline=None, color=colors[tenant], linewidth=1.5)
        if tenant in fair:
            bottom.plot(x, fair[tenant], color=colors[tenant], linestyle="--", linewidth=1.2)
    bottom.plot([], [], color="black", linewidth=1.5, label="share of usage")
    bottom.plot([], [], color="black", linestyle="--", linewidth=1.2, label="fair share")
    bottom.legend(handles=bottom.get_lines()[-2:], loc="upper right", fontsize="small")
    bottom.set(ylabel="share of usage (%)", xlabel="time (UTC)", ylim=(0, 105))
    bottom.set_title("Share of the federation's usage (solid) against fair share (dashed)", fontsize="medium")
    bottom.grid(True, alpha=0.3)
    locator = AutoDateLocator()
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
