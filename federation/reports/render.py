"""Reports as table rows (for ``emit``) and CSV: one row per tenant, or per (tenant, cluster).

Tables are for people: Kubernetes quantities, numbers and durations as ``policies.format`` spells
them; usage in plain hours (``12.4 cpu-h, 3.1 GiB-h``: ``usage``). CSV is for spreadsheets: one
column per (measure, resource) in base units, times in ISO 8601 UTC, one header row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from federation.reports.models import ClusterRow, QuotaReport, UserPrioReport
from policies.format import format_number, format_resources, format_span, format_when, in_bytes

GIB = 2.0**30

QUOTA_COLUMNS = [
    "TENANT",
    "GUARANTEE",
    "CAP",
    "ALLOCATED",
    "SHARE",
    "WINDOW SHARE",
    "FAIR SHARE",
    "BORROWED",
    "LENT",
    "RUP",
    "EUP",
    "FACTOR",
    "USAGE",
    "RUN",
    "PEND",
    "DONE",
    "FAIL",
    "WAIT P50",
    "WAIT P95",
]
CLUSTER_COLUMNS = ["TENANT", "CLUSTER", "ALLOCATED", "USAGE", "UNIT-H", "RUN", "DONE", "FAIL"]
USERPRIO_COLUMNS = ["TENANT", "EFFECTIVE PRIORITY", "REAL PRIORITY", "FACTOR", "IN USE", "USAGE (unit-h)", "LAST USAGE"]


def amount(values: Mapping[str, float]) -> str:
    """``cpu=8, memory=32Gi`` as Kubernetes quantities (``policies.format``); empty for none."""
    return format_resources(values) if values else ""


def usage(hours: Mapping[str, float]) -> str:
    """Resource-hours as a person reads them: ``12.4 cpu-h, 3.1 GiB-h, 2 gpu-h`` (memory and other
    byte resources in GiB-hours, a gpu of any vendor as gpu-h, the rest as ``<name>-h``); empty for none."""
    return ", ".join(f"{_hours_number(hours[name] / _scale(name))} {_hour_unit(name)}" for name in sorted(hours))


def _scale(name: str) -> float:
    return GIB if in_bytes(name) else 1.0


def _hour_unit(name: str) -> str:
    if name == "memory":
        return "GiB-h"
    if in_bytes(name):
        return f"{name} GiB-h"
    if name == "cpu" or name.endswith("gpu"):
        return f"{name.rsplit('/', 1)[-1]}-h"
    return f"{name}-h"


def _hours_number(value: float) -> str:
    """Readable, never an SI prefix: 0.76, 3.1, 12.4, 184, 12,346; below 0.01, '<0.01'."""
    size = abs(value)
    if size == 0:
        return "0"
    if size < 0.01:
        return "<0.01"
    if size >= 100:
        return f"{value:,.0f}"
    text = f"{value:.{2 if size < 10 else 1}f}"
    return text.rstrip("0").rstrip(".")


def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def duration(seconds: float | None) -> str:
    return "" if seconds is None else format_span(seconds)


def iso(timestamp: float | None) -> str:
    return "" if timestamp is None else datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def quota_rows(report: QuotaReport) -> list[list[Any]]:
    if report.by_cluster:
        return [
            [
                row.tenant,
                c.cluster,
                amount(c.allocated),
                usage(c.resource_hours),
                format_number(c.unit_hours),
                c.running,
                c.completed,
                c.failed,
            ]
            for row in report.tenants
            for c in row.clusters
        ]
    return [
        [
            row.tenant,
            amount(row.guarantee),
            amount(row.cap),
            amount(row.allocated),
            percent(row.share_now),
            percent(row.share_window),
            percent(row.fair_share),
            amount(row.borrowed),
            amount(row.lent),
            format_number(row.real_priority),
            format_number(row.effective_priority),
            format_number(row.priority_factor),
            usage(row.resource_hours),
            row.running,
            row.pending,
            row.completed,
            row.failed,
            duration(row.wait_p50),
            duration(row.wait_p95),
        ]
        for row in report.tenants
    ]


def userprio_rows(report: UserPrioReport, now: float) -> list[list[Any]]:
    """Last usage in the viewer's zone and how long ago it is from ``now``."""
    return [
        [
            row.tenant,
            format_number(row.effective_priority),
            format_number(row.real_priority),
            format_number(row.priority_factor),
            amount(row.in_use),
            format_number(row.accumulated_unit_hours),
            "" if row.last_usage is None else format_when(row.last_usage, now, local=True),
        ]
        for row in report.rows
    ]


_PER_RESOURCE = ("guarantee", "cap", "allocated", "borrowed", "lent", "resource_hours")
_SCALARS = (
    "allocated_units",
    "share_now",
    "share_window",
    "fair_share",
    "fair_share_units",
    "real_priority",
    "effective_priority",
    "priority_factor",
    "unit_hours",
    "running",
    "pending",
    "completed",
    "failed",
    "cancelled",
    "wait_p50",
    "wait_p95",
)
_CLUSTER_PER_RESOURCE = ("allocated", "resource_hours")
_CLUSTER_SCALARS = ("allocated_units", "unit_hours", "running", "completed", "failed")


def quota_csv(report: QuotaReport) -> str:
    """Header + one row per tenant; with ``by_cluster``, one per (tenant, cluster) with cluster figures."""
    if report.by_cluster:
        # A tenant with no cluster figures still gets its line, under an empty cluster name.
        records = [
            (row.tenant, c.model_dump()) for row in report.tenants for c in row.clusters or [ClusterRow(cluster="")]
        ]
        resources = _resources(data for _, data in records)
        header = ["tenant", "cluster", *_columns(_CLUSTER_PER_RESOURCE, resources), *_CLUSTER_SCALARS]
        body = [
            [tenant, data["cluster"], *_cells(data, _CLUSTER_PER_RESOURCE, resources), *_plain(data, _CLUSTER_SCALARS)]
            for tenant, data in records
        ]
    else:
        dumps = [row.model_dump() for row in report.tenants]
        resources = _resources(dumps)
        header = ["tenant", "queues", *_columns(_PER_RESOURCE, resources), *_SCALARS, "last_usage"]
        body = [
            [
                data["tenant"],
                ";".join(data["queues"]),
                *_cells(data, _PER_RESOURCE, resources),
                *_plain(data, _SCALARS),
                iso(data["last_usage"]),
            ]
            for data in dumps
        ]
    return _write([header, *body])


def userprio_csv(report: UserPrioReport) -> str:
    dumps = [row.model_dump() for row in report.rows]
    resources = _resources(dumps)
    header = [
        "tenant",
        "effective_priority",
        "real_priority",
        "priority_factor",
        *_columns(("in_use",), resources),
        "in_use_units",
        "accumulated_unit_hours",
        "last_usage",
    ]
    body = [
        [
            d["tenant"],
            *_plain(d, ("effective_priority", "real_priority", "priority_factor")),
            *_cells(d, ("in_use",), resources),
            *_plain(d, ("in_use_units", "accumulated_unit_hours")),
            iso(d["last_usage"]),
        ]
        for d in dumps
    ]
    return _write([header, *body])


def _resources(dumps: Iterable[Mapping[str, Any]]) -> list[str]:
    names: set[str] = set()
    for data in dumps:
        for value in data.values():
            if isinstance(value, dict):
                names |= set(value)
    return sorted(names)


def _columns(measures: Sequence[str], resources: Sequence[str]) -> list[str]:
    return [f"{measure}:{name}" for measure in measures for name in resources]


def _cells(data: Mapping[str, Any], measures: Sequence[str], resources: Sequence[str]) -> list[Any]:
    return [data[measure].get(name, "") for measure in measures for name in resources]


def _plain(data: Mapping[str, Any], names: Sequence[str]) -> list[Any]:
    return ["" if data[name] is None else data[name] for name in names]


def _write(rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()
