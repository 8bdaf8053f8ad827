"""Human text for resources, numbers, durations and times: one spelling wherever a person reads them.

Reasons, events, explain's text and the CLI all format through here (the policies layer too, so it
imports nothing from federation). Machine fields stay numbers. Resources read as Kubernetes
quantities rounded to three decimals (``15.7Gi``, ``500m``), durations as ``1h20m``, times as ISO 8601
with their offset and, given ``now``, how far off they are (``in 2h10m``, ``3m ago``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal

from policies.units import format_duration

_BINARY = (("Ei", 2.0**60), ("Pi", 2.0**50), ("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10))
_DECIMAL = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("", 1.0), ("m", 1e-3), ("u", 1e-6))
_SMALLEST = ("n", 1e-9)
# A span is rounded to the unit below its largest: (largest, the step it is rounded to).
_SPAN_STEPS = ((86400, 3600), (3600, 60), (60, 1))


def format_number(value: float) -> str:
    """Three decimals without trailing zeros, or four significant digits below 1 (0.0004 stays 0.0004)."""
    text = f"{value:.3f}" if abs(value) >= 1 else format(Decimal(f"{value:.4g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def in_bytes(resource: str) -> bool:
    """Whether a resource is counted in bytes (memory, storage)."""
    return resource in ("memory", "ephemeral-storage") or resource.endswith("memory")


def format_quantity(resource: str, amount: float) -> str:
    """A quantity as Kubernetes spells it: bytes in binary units (268435456 -> '256Mi'), the rest in
    decimal ones (0.5 -> '500m', 2 -> '2'; thousands stay plain, as cpu counts read better so)."""
    if amount == 0:
        return "0"
    units = (*_BINARY, ("", 1.0)) if in_bytes(resource) else _DECIMAL
    for suffix, scale in units:
        if abs(amount) >= scale:
            return format_number(amount / scale) + suffix
    suffix, scale = units[-1] if in_bytes(resource) else _SMALLEST
    return format_number(amount / scale) + suffix


def format_resources(resources: Mapping[str, float]) -> str:
    """'cpu=2, memory=16Gi' by resource name; 'nothing' for none."""
    shown = ", ".join(f"{name}={format_quantity(name, amount)}" for name, amount in sorted(resources.items()))
    return shown or "nothing"


def format_labels(labels: Mapping[str, str]) -> str:
    """'region=eu, zone=a' by key, as a clusterSelector is written; 'no labels' for none."""
    return ", ".join(f"{key}={value}" for key, value in sorted(labels.items())) or "no labels"


def format_span(seconds: float) -> str:
    """A duration to a person, rounded to its two largest units: 7805 -> '2h10m', 45.4 -> '45s'."""
    whole = round(abs(seconds))
    for largest, step in _SPAN_STEPS:
        if whole >= largest:
            whole = round(whole / step) * step
            break
    return format_duration(whole)


def format_time(timestamp: float, *, local: bool = False) -> str:
    """ISO 8601 to the second with its offset: UTC in the API's text, the viewer's zone in the CLI."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    return (moment.astimezone() if local else moment).isoformat(timespec="seconds")


def format_ago(timestamp: float, now: float) -> str:
    """How far a time is from ``now``: '3m ago', 'in 2h10m', 'now' (within a second)."""
    delta = timestamp - now
    if abs(delta) < 1:
        return "now"
    return f"in {format_span(delta)}" if delta > 0 else f"{format_span(delta)} ago"


def format_when(timestamp: float, now: float, *, local: bool = False) -> str:
    """The time and how far it is from ``now``: '2026-12-02T10:00:00+00:00 (in 2h10m)', '(3m ago)'."""
    return f"{format_time(timestamp, local=local)} ({format_ago(timestamp, now)})"


def format_when_compact(timestamp: float, now: float, *, local: bool = False) -> str:
    """``format_when`` for a narrow column: the time of day alone on ``now``'s date ('14:46:40 (3m ago)'),
    else the date and the minute ('2026-12-01 10:00 (1d ago)'), in the same zone as ``format_time``."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    today = datetime.fromtimestamp(now, UTC)
    if local:
        moment, today = moment.astimezone(), today.astimezone()
    shown = moment.strftime("%H:%M:%S") if moment.date() == today.date() else moment.strftime("%Y-%m-%d %H:%M")
    return f"{shown} ({format_ago(timestamp, now)})"
