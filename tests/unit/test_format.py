"""The human formats (``policies.format``): worked examples with known answers, and round trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.format import (
    format_labels,
    format_number,
    format_quantity,
    format_resources,
    format_span,
    format_time,
    format_when,
)
from policies.units import format_duration, parse_duration, parse_quantity

GI = 2**30
HARNESS_START = 1_000_000.0  # 1970-01-12T13:46:40Z


@pytest.mark.parametrize(
    ("resource", "amount", "shown"),
    [
        ("memory", 268435456, "256Mi"),  # not 0Gi
        ("memory", 16 * GI, "16Gi"),
        ("memory", 1.5 * GI, "1.5Gi"),
        ("memory", 16e9, "14.901Gi"),  # 16e9 / 2**30 = 14.9011...
        ("memory", 512, "512"),
        ("ephemeral-storage", 2**40, "1Ti"),
        ("gpu-memory", 80 * GI, "80Gi"),
        ("cpu", 0.5, "500m"),
        ("cpu", 0.1 + 0.2, "300m"),  # float noise does not show
        ("cpu", 2, "2"),
        ("cpu", 1.25, "1.25"),
        ("cpu", 1500, "1500"),  # thousands of cpus stay plain
        ("cpu", 2.5e6, "2.5M"),
        ("cpu", 0.0005, "500u"),
        ("nvidia.com/gpu", 8, "8"),
        ("cpu", 0, "0"),
        ("cpu", -1.5, "-1.5"),
    ],
)
def test_quantities_read_as_kubernetes_writes_them(resource: str, amount: float, shown: str) -> None:
    assert format_quantity(resource, amount) == shown


def test_resources_labels_and_numbers() -> None:
    assert format_resources({"memory": 64 * GI, "cpu": 0.5}) == "cpu=500m, memory=64Gi"
    assert format_resources({}) == "nothing"
    assert format_labels({"zone": "a", "region": "eu"}) == "region=eu, zone=a"
    assert format_labels({}) == "no labels"
    assert [format_number(x) for x in (2.0, 99.5, 1 / 3, 0.0004, 1234567.8912)] == [
        "2",
        "99.5",
        "0.3333",
        "0.0004",
        "1234567.891",
    ]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(4800, "1h20m"), (5400, "1h30m"), (604800, "7d"), (90061, "1d1h1m1s"), (90, "1m30s"), (1.5, "1.5s")],
)
def test_durations_are_written_largest_unit_first(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown
    assert parse_duration(shown) == seconds


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(7805, "2h10m"), (45.4, "45s"), (4800, "1h20m"), (86399, "1d"), (90061, "1d1h"), (0.2, "0s"), (-180, "3m")],
)
def test_spans_are_rounded_to_their_two_largest_units(seconds: float, shown: str) -> None:
    assert format_span(seconds) == shown


def test_times_are_iso_with_their_offset_and_how_far_they_are() -> None:
    assert format_time(HARNESS_START) == "1970-01-12T13:46:40+00:00"
    assert format_when(HARNESS_START + 7805, HARNESS_START) == "1970-01-12T15:56:45+00:00 (in 2h10m)"
    assert format_when(HARNESS_START - 180, HARNESS_START) == "1970-01-12T13:43:40+00:00 (3m ago)"
    assert format_when(HARNESS_START, HARNESS_START + 0.4) == "1970-01-12T13:46:40+00:00 (now)"


@pytest.mark.usefixtures("paris")
def test_local_times_carry_the_local_offset_of_that_date() -> None:
    assert format_time(HARNESS_START, local=True) == "1970-01-12T14:46:40+01:00"
    summer = 1_750_000_000.0  # 2025-06-15T15:06:40Z: Paris keeps summer time then
    assert format_when(summer, summer + 60, local=True) == "2025-06-15T17:06:40+02:00 (1m ago)"


finite = {"allow_nan": False, "allow_infinity": False}


@given(st.sampled_from(["cpu", "nvidia.com/gpu", "memory"]), st.floats(min_value=1e-9, max_value=1e20, **finite))
def test_a_shown_quantity_reads_back_within_its_rounding(resource: str, amount: float) -> None:
    """Three decimals of a value scaled into [1, 1024) are within 5e-4 of it (relative)."""
    back = parse_quantity(format_quantity(resource, amount))
    assert math.isclose(back, amount, rel_tol=5e-4)


@given(st.floats(min_value=0, max_value=1e9, **finite))
def test_a_span_is_within_half_of_its_last_unit(seconds: float) -> None:
    """Rounded to the unit below the largest: at most half that unit off, and never further than 1/48."""
    shown = parse_duration(format_span(seconds))
    assert abs(shown - seconds) <= max(0.5, seconds / 48)
