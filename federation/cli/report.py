"""``fedq report quota`` and ``fedq report userprio``: the server computes, the CLI renders.

CSV is rendered here from the JSON report (same renderer as the API's ``format=csv``), and
``--plot`` asks the server for the usage series and draws it locally.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from federation.cli.context import OUTPUTS, client_from, output_of, output_options, server_options
from federation.cli.output import Column, emit

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
    from federation.reports.models import QuotaReport  # pydantic: paid by reports only
    from federation.reports.render import CLUSTER_COLUMNS, QUOTA_COLUMNS, quota_csv, quota_rows
    from policies.format import format_number, format_time

    report = QuotaReport.model_validate(data)
    if args.plot:
        assert report.series is not None, "the server sent no usage series"
        from federation.reports.plot import plot_quota  # matplotlib: ~0.5 s, paid only by --plot

        window = f"{format_time(report.since, local=True)} to {format_time(report.until, local=True)}"
        plot_quota(report.series, args.plot, title=f"Usage against fair share, {window}")
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
    emit(
        data,
        output,
        columns=[_QUOTA_SHOWN.get(name, Column(name)) for name in columns],
        rows=quota_rows(report),
        title=title,
    )
    return 0


def cmd_userprio(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        data = client.request("GET", "/v1/reports/userprio", params={"tenant": args.tenant})
    from federation.reports.models import UserPrioReport
    from federation.reports.render import USERPRIO_COLUMNS, userprio_csv, userprio_rows
    from policies.units import format_duration

    report = UserPrioReport.model_validate(data)
    if output_of(args) == "csv":
        sys.stdout.write(userprio_csv(report))
        return 0
    title = f"User priorities (half-life {format_duration(report.half_life)}), lowest effective priority first"
    columns = [_USERPRIO_SHOWN.get(name, Column(name)) for name in USERPRIO_COLUMNS]
    emit(data, output_of(args), columns=columns, rows=userprio_rows(report, args.now), title=title)
    return 0


_QUOTA_SHOWN = {
    column.header: column
    for column in (
        Column("ALLOCATED", drop=3, fold=True),
        Column("SHARE", drop=2),
        Column("FAIR SHARE", drop=1),
        Column("EUP", drop=4),
        Column("USAGE", drop=5, fold=True),
        Column("WAIT P50", drop=6),
        Column("CLUSTER"),
        Column("UNIT-H", drop=2),
        *(
            Column(name, wide=True)
            for name in ("GUARANTEE", "CAP", "WINDOW SHARE", "BORROWED", "LENT", "RUP", "FACTOR", "DONE", "FAIL")
        ),
        Column("WAIT P95", wide=True),
    )
}
"""The compact quota table: who, what they hold, their share against the fair one, jobs and waits;
the rest under ``-o wide``. Columns named here not at all (TENANT, RUN, PEND) always show."""
_USERPRIO_SHOWN = {
    column.header: column
    for column in (Column("FACTOR", drop=2), Column("IN USE", drop=3, fold=True), Column("LAST USAGE", drop=1))
}


def _report_options() -> argparse.ArgumentParser:
    """The shared options with CSV added to ``--output``."""
    return argparse.ArgumentParser(add_help=False, parents=[server_options(), output_options([*OUTPUTS, "csv"])])


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    report = sub.add_parser(
        "report",
        parents=[common],
        help="quota and usage reports",
        epilog="e.g. fedq report quota --since 7d; fedq report userprio",
    )
    kinds = report.add_subparsers(dest="report", required=True, metavar="REPORT")

    quota = kinds.add_parser(
        "quota",
        parents=[_report_options()],
        help="quota, shares, usage and waits per tenant",
        formatter_class=raw,
        epilog="e.g. fedq report quota --since 7d            # compact; -o wide for every column\n"
        "     fedq report quota --since 2026-01-01 --until 2026-02-01 --by cluster -o csv\n"
        "     fedq report quota --plot usage.png",
    )
    quota.add_argument("--tenant", help="one tenant, e.g. alice (a tenant token always sees only its own)")
    quota.add_argument("--queue", help="only usage and jobs in this queue's subtree, e.g. research")
    quota.add_argument(
        "--since",
        default="auto",
        help="window start: '7d' (ago), ISO date/time, Unix seconds, or 'auto' (the default: the smallest of "
        "1h, 6h, 1d, 7d, 30d that holds all the recorded usage)",
    )
    quota.add_argument("--until", default="now", help="window end, as --since (default: now)")
    quota.add_argument("--by", choices=["cluster"], help="one row per (tenant, cluster)")
    quota.add_argument("--plot", metavar="FILE.png", help="also draw usage against fair share over the window")
    quota.add_argument("--bins", type=int, default=DEFAULT_PLOT_BINS, help="time bins of the plot, e.g. 48")
    quota.set_defaults(func=cmd_quota)

    userprio = kinds.add_parser(
        "userprio",
        parents=[_report_options()],
        help="tenants by effective priority",
        epilog="e.g. fedq report userprio --tenant alice",
    )
    userprio.add_argument("--tenant", help="one tenant, e.g. alice")
    userprio.set_defaults(func=cmd_userprio)
