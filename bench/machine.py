"""A speed marker for the machine a benchmark ran on: machines of the same kind differ by 2x from day
to day, so figures from different days compare only after scaling by this (DESIGN 4 targets are
absolute; bench/README.md records the marker with each day's rows)."""

from __future__ import annotations

import timeit


def speed_marker() -> str:
    """``sum(range(10**6))``, best of 5 (as ``python -m timeit`` reports it): 24-30 ms on 2026-12-02's machine."""
    best = min(timeit.repeat("sum(range(10**6))", number=10, repeat=5)) / 10
    return f"machine speed marker: sum(range(10**6)) takes {best * 1000:.1f} ms (lower is faster)"
