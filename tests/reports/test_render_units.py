"""Usage in the report's table in plain hours (issue 36: ``cpu=184.111u``, ``cpu=763.948m`` were
resource-hours in SI prefixes)."""

from __future__ import annotations

import pytest

from federation.reports.render import quota_rows, usage
from tests.reports.test_quota import report

GIB = 2.0**30


@pytest.mark.parametrize(
    ("hours", "shown"),
    [
        ({"cpu": 0.763948}, "0.76 cpu-h"),
        ({"cpu": 184.111e-6}, "<0.01 cpu-h"),
        ({"cpu": 12.44, "memory": 3.1 * GIB}, "12.4 cpu-h, 3.1 GiB-h"),
        ({"cpu": 12_345.6, "nvidia.com/gpu": 2.0}, "12,346 cpu-h, 2 gpu-h"),
        ({"ephemeral-storage": 0.5 * GIB, "licenses": 3.25}, "0.5 ephemeral-storage GiB-h, 3.25 licenses-h"),
        ({}, ""),
    ],
)
def test_usage_reads_in_plain_hours(hours: dict[str, float], shown: str) -> None:
    assert usage(hours) == shown


def test_the_quota_tables_usage_column_is_in_cpu_hours() -> None:
    # The scenario's window: alice 50 cores x 2 h = 100 core-hours (tests/reports/scenario.py).
    alice = quota_rows(report())[0]
    assert alice[0] == "alice" and "100 cpu-h" in alice, alice
