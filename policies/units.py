"""Quantity and duration parsing shared by every layer.

Quantities go through ``kubernetes.utils.parse_quantity`` so "500m", "4Gi" and "1e3" mean exactly
what they mean to Kubernetes; durations accept Go/Prometheus-style strings ("90m", "1h30m", "2d").
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
MAX_DURATION = 36500 * 86400.0
"""The longest duration anything takes (100 years): 'inf' or 1e400 would be a walltime or a token that
never ends, and a time plus a longer one is no date any more."""


def _as_float(value: int | float) -> float:
    """An int too large for a float (YAML reads 1 followed by 400 zeros as one) is infinite, not an error."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_quantity(value: str | int | float) -> float:
    """A Kubernetes quantity as a float in base units; raises ValueError naming the bad text."""
    if isinstance(value, bool):
        raise ValueError(f"quantity must be a number or a string like '500m' or '4Gi', not {value!r}")
    if isinstance(value, int | float):
        return _as_float(value)
    # Imported on first use: the kubernetes package loads its whole client (~0.2 s), which every
    # ``fedq`` command would pay at start-up though most never parse a quantity string.
    from kubernetes.utils import parse_quantity as k8s_parse_quantity

    try:
        parsed = k8s_parse_quantity(str(value).strip())
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise ValueError(f"invalid quantity {value!r}: expected e.g. '2', '500m', '4Gi'") from exc
    if not isinstance(parsed, Decimal):
        parsed = Decimal(parsed)
    return float(parsed)


def parse_duration(value: str | int | float) -> float:
    """Seconds from a number (taken as seconds) or a string like '90s', '2h', '1h30m', '1d'; finite and
    at most ``MAX_DURATION`` either way."""
    seconds = _duration_seconds(value)
    if not math.isfinite(seconds):
        raise ValueError(f"duration must be finite, e.g. '90s', '2h' or '7d' (got {value!r})")
    if abs(seconds) > MAX_DURATION:
        raise ValueError(f"duration must be at most {format_duration(MAX_DURATION)} (got {value!r})")
    return seconds


def _duration_seconds(value: str | int | float) -> float:
    if isinstance(value, bool):
        raise ValueError(f"duration must be seconds or a string like '2h', not {value!r}")
    if isinstance(value, int | float):
        return _as_float(value)
    text = str(value).strip()
    if not text:
        raise ValueError("duration is empty: expected e.g. '90s', '2h', '1h30m'")
    try:
        return float(text)
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f"invalid duration {value!r}: expected e.g. '90s', '2h', '1h30m', '1d'")
    return total


def format_duration(seconds: float) -> str:
    """The spelling ``parse_duration`` reads back exactly, largest unit first: 4800 -> '1h20m', 604800 -> '7d'."""
    if seconds > 0 and float(seconds).is_integer():
        left = int(seconds)
        parts = []
        for unit in ("d", "h", "m", "s"):
            count, left = divmod(left, int(_DURATION_UNITS[unit]))
            if count:
                parts.append(f"{count}{unit}")
        return "".join(parts)
    # repr is the shortest decimal that reads back as the same float; Decimal writes it without an
    # exponent (1e-07 -> 0.0000001), which parse_duration does not read. (A fixed six places lost digits.)
    text = format(Decimal(repr(float(seconds))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "s"
