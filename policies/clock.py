"""Injected time: every scheduling and accounting path reads a ``Clock``, never the wall clock.

The simulator and the tests drive a ``ManualClock``; only entry points (the server, the agent,
``fedq up``) construct a ``SystemClock``.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch (virtual for simulated clocks)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to; the simulator's and the tests' time source."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards (advance by {seconds})")
        self._now += seconds
        return self._now

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"cannot move a clock backwards (from {self._now} to {t})")
        self._now = float(t)
