"""``fedq report quota`` and ``fedq report userprio``: the server computes, the CLI renders.

CSV is rendered here from the JSON report (same renderer as the API's ``format=csv``), and
``--plot`` asks the server for the usage series and draws it locally.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from federation.cli.context import client_from, common_options, output_of
from federation.cli.output import emit
from federation.reports.models import QuotaReport, UserPrioReport
from federation.reports.render import (
    CLUSTER_COLUMNS,
    QUOTA_COLUMNS,
    USERPRIO_COLUMNS,
    quota_csv,
    quota_rows,
    userprio_csv,
    userprio_rows,
)
from policies.format import format_number, format_time
from policies.units import format_duration

DEFAULT_PLOT_BINS = 96


def cmd_quota(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {
        "tenant": args.tenant,
        "queue": args.queue,
        "since": args.since,
        "until": args.until,
        "by": args.by,
        "bins": args.bins if args.plot else 0,
    }
    with client_from(args) as client:
        data = client.request("GET", "/v1/reports/quota", params=params)
    report = QuotaReport.model_validate(data)
    if args.plot:
        assert report.series is not None, "the server sent no usage series"
        from federation.reports.plot import plot_quota  # matplotlib: ~0.5 s, paid only by --plot

        window = f"{format_time(report.since, local=True)} to {format_time(report.until, local=True)}"
        fair = {row.tenant: row.fair_share for row in report.tenants}
        plot_quota(report.series, fair, args.plot, title=f"Usage against fair share, {window}")
        data.pop("series", None)
    output = output_of(args)
    if output == "csv":
        sys.stdout.write(quota_csv(report))
        return 0
    title = (
        f"Quota {format_time(report.since, local=True)} to {format_time(report.until, local=True)} - "
        f"{format_number(report.allocated_units)} of {format_number(report.capacity_units)} units allocated"
    )
    columns = CLUSTER_COLUMNS if report.by_cluster else QUOTA_COLUMNS
    emit(data, output, columns=columns, rows=quota_rows(report), title=title)
    return 0


def cmd_userprio(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        data = client.request("GET", "/v1/reports/userprio", params={"tenant": args.tenant})
    report = UserPrioReport.model_validate(data)
    if output_of(args) == "csv":
        sys.stdout.write(userprio_csv(report))
        return 0
    title = f"User priorities (half-life {format_duration(report.half_life)}), lowest effective priority first"
    emit(data, output_of(args), columns=USERPRIO_COLUMNS, rows=userprio_rows(report), title=title)
    return 0


def _common_with_csv() -> argparse.ArgumentParser:
    """The shared options with CSV added to ``--output``, on a fresh copy (resolving the conflict
    removes the old action from its parser, which must not be the one other commands share)."""
    parent = argparse.ArgumentParser(add_help=False, conflict_handler="resolve", parents=[common_options()])
    parent.add_argument(
        "--output", "-o", choices=["table", "json", "yaml", "csv"], default=argparse.SUPPRESS, help="output format"
    )
    return parent


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    report = sub.add_parser("report", parents=[common], help="quota and usage reports")
    kinds = report.add_subparsers(dest="report", required=True, metavar="REPORT")

    quota = kinds.add_parser("quota", parents=[_common_with_csv()], help="quota, shares, usage and waits per tenant")
    quota.add_argument("--tenant", help="one tenant (a tenant token always sees only its own)")
    quota.add_argument("--queue", help="only usage and jobs in this queue's subtree")
    quota.add_argument("--since", default="7d", help="window start: '7d' (ago), ISO date/time, or Unix seconds")
    quota.add_argument("--until", default="now", help="window end, as --since (default: now)")
    quota.add_argument("--by", choices=["cluster"], help="one row per (tenant, cluster)")
    quota.add_argument("--plot", metavar="FILE.png", help="also draw usage against fair share over the window")
    quota.add_argument("--bins", type=int, default=DEFAULT_PLOT_BINS, help="time bins of the plot")
    quota.set_defaults(func=cmd_quota)

    userprio = kinds.add_parser("userprio", parents=[_common_with_csv()], help="tenants by effective priority")
    userprio.add_argument("--tenant", help="one tenant")
    userprio.set_defaults(func=cmd_userprio)
