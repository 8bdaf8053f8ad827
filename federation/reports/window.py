"""Report windows from the command line or a query string: ``7d`` ago, an ISO date, epoch seconds, or
``auto``: the smallest of the standard windows that holds every recorded usage."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from policies.units import parse_duration

_NUMBER = re.compile(r"^\d+(\.\d+)?$")
WINDOWS = ("1h", "6h", "1d", "7d", "30d")
"""The windows the dashboard offers, smallest first (its views/usage.js lists the same)."""
AUTO = "auto"


def fitting_window(first: float | None, now: float) -> str:
    """The smallest of ``WINDOWS`` reaching back to ``first`` (the oldest usage recorded; None: none),
    so a plot opens on the data rather than on six minutes squeezed at the edge of a day; the largest
    when the data is older than all."""
    for window in WINDOWS:
        if first is None or now - parse_duration(window) <= first:
            return window
    return WINDOWS[-1]


def parse_when(text: str, now: float) -> float:
    """``now``; a duration with a unit (``90m``, ``7d``: that long before ``now``); a bare number
    (Unix seconds); or an ISO 8601 date or time (UTC unless it names a zone)."""
    value = text.strip()
    if value == "now":
        return now
    if _NUMBER.match(value):
        return float(value)
    try:
        return now - parse_duration(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: use e.g. '7d' (ago), '2024-05-01', '2024-05-01T12:00' or 'now'"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
