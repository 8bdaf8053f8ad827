"""Report windows from the command line or a query string: ``7d`` ago, an ISO date, or epoch seconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from policies.units import parse_duration

_NUMBER = re.compile(r"^\d+(\.\d+)?$")


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
