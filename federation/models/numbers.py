"""The kinds of number a document holds, each checked here once: finite, within a sane bound, and never a
boolean (JSON's ``true`` and YAML's ``yes`` are not 1, though pydantic would take them so).

Resource quantities are checked by ``parse_resources`` and durations' syntax and bound by
``parse_duration``; this module says which durations a field takes.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from policies.units import parse_duration

MAX_WEIGHT = 1e6
"""The largest weight or factor (queue weights, priority factors, usage weights): shares are ratios of
weights, and a weight of 1e300 would turn every other queue's share into zero."""


def not_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not the boolean {str(value).lower()}")
    return value


Integer = Annotated[int, BeforeValidator(not_boolean)]
"""An integer field (bounds are the field's own)."""

Weight = Annotated[float, BeforeValidator(not_boolean), Field(gt=0, le=MAX_WEIGHT, allow_inf_nan=False)]
"""A queue's weight or priority factor: positive and at most ``MAX_WEIGHT``."""

UsageWeight = Annotated[float, BeforeValidator(not_boolean), Field(ge=0, le=MAX_WEIGHT, allow_inf_nan=False)]
"""A resource's billing weight: 0 leaves it out; a negative one would make running lower usage."""


def seconds(value: Any) -> float:
    """A duration that may be 0 ('90s', '5m', a number of seconds)."""
    parsed = parse_duration(value)
    if parsed < 0:
        raise ValueError(f"duration must not be negative (got {value!r})")
    return parsed


def positive_seconds(value: Any) -> float:
    """A duration that must be more than 0."""
    parsed = parse_duration(value)
    if parsed <= 0:
        raise ValueError(f"must be a positive duration, e.g. 90s, 5m or 7d (got {value!r})")
    return parsed
