"""One integrator of allocation over time: current rates, accumulated resource-seconds, decayed RUP.

Between two events an entity's allocation is constant, so integrating lazily at the next event (or
when asked) is exact: resource-seconds grow by ``rate * dt`` and the real priority follows
HTCondor's ``RUP(t) = b*RUP(t-dt) + (1-b)*rho`` with ``b = 0.5**(dt/halfLife)``, which is the
closed-form solution for a constant ``rho`` over any ``dt`` (``policies.decay_rup``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.shares import RUP_FLOOR, decay_rup


@dataclass(slots=True)
class Meter:
    """Allocation of one entity (tenant, queue or series). ``half_life`` None: no RUP is kept."""

    half_life: float | None
    last: float
    rates: dict[str, float] = field(default_factory=dict)
    units: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    unit_seconds: float = 0.0
    rup: float = RUP_FLOOR
    last_active: float | None = None
    runs: int = 0

    def advance(self, now: float) -> float:
        """Integrate up to ``now`` at the current rates; returns the seconds integrated."""
        dt = now - self.last
        if dt <= 0:
            return 0.0
        if self.runs:
            for name, rate in self.rates.items():
                self.seconds[name] = self.seconds.get(name, 0.0) + rate * dt
            self.unit_seconds += self.units * dt
        if self.half_life is not None:
            self.rup = decay_rup(self.rup, self.units, dt, self.half_life)
        self.last = now
        return dt

    def change(self, now: float, resources: Mapping[str, float], units: float, sign: int) -> None:
        """Add (sign +1) or remove (sign -1) one run's allocation at ``now``."""
        self.advance(now)
        self.runs += sign
        if self.runs <= 0:
            # Exactly zero when idle: repeated add/subtract of fractional cores would leave dust.
            self.runs, self.rates, self.units = 0, {}, 0.0
            self.last_active = now
            return
        for name, amount in resources.items():
            self.rates[name] = self.rates.get(name, 0.0) + sign * amount
        self.units += sign * units

    def backdate(self, since: float, resources: Mapping[str, float], units: float, sign: int) -> None:
        """Move one run's start (sign +1) or end (sign -1), just applied at ``last``, back to ``since``.

        An event can arrive after the meter moved past its time. Usage is linear in the rates, so the
        run's share of ``[since, last)`` is added (or taken back) as it would have been counted; the
        real priority likewise gains ``units * (1 - 0.5**(dt/halfLife))``, exact unless the 0.5 floor
        bound meanwhile (a rate under half a unit)."""
        dt = self.last - since
        if dt <= 0:
            return
        for name, amount in resources.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + sign * amount * dt
        self.unit_seconds += sign * units * dt
        if self.half_life is not None:
            self.rup = max(RUP_FLOOR, self.rup + sign * units * (1.0 - 0.5 ** (dt / self.half_life)))

    def rup_at(self, now: float) -> float:
        """The real priority at ``now`` without moving the meter (``now`` before ``last``: as at ``last``)."""
        if self.half_life is None:
            raise ValueError("this meter keeps no real priority")
        return decay_rup(self.rup, self.units, max(0.0, now - self.last), self.half_life)

    def last_usage(self, now: float) -> float | None:
        """HTCondor's LastUsageTime: now while the entity holds resources, else when it last stopped."""
        return now if self.runs else self.last_active

    def copy(self) -> Meter:
        return Meter(
            self.half_life,
            self.last,
            dict(self.rates),
            self.units,
            dict(self.seconds),
            self.unit_seconds,
            self.rup,
            self.last_active,
            self.runs,
        )

    def encode(self) -> dict[str, Any]:
        return {
            "l": self.last,
            "r": self.rates,
            "u": self.units,
            "s": self.seconds,
            "us": self.unit_seconds,
            "p": self.rup,
            "a": self.last_active,
            "n": self.runs,
        }

    @classmethod
    def decode(cls, data: Mapping[str, Any], half_life: float | None) -> Meter:
        return cls(
            half_life,
            float(data["l"]),
            {str(k): float(v) for k, v in data["r"].items()},
            float(data["u"]),
            {str(k): float(v) for k, v in data["s"].items()},
            float(data["us"]),
            float(data["p"]),
            None if data["a"] is None else float(data["a"]),
            int(data["n"]),
        )


class RealPriorities(Mapping[str, float]):
    """The meters' real priorities at ``at``, each worked out when first read.

    A cycle reads those of the tenants and queues with work, of all the accountant has ever seen
    (hundreds over a long trace), and a real priority costs an exponential. Read it before the
    meters next change, as a cycle does: the meters are the accountant's own, not copies.
    """

    __slots__ = ("_meters", "_at", "_read")

    def __init__(self, meters: Mapping[str, Meter], at: float) -> None:
        self._meters = dict(meters)
        self._at = at
        self._read: dict[str, float] = {}

    def __getitem__(self, name: str) -> float:
        rup = self._read.get(name)
        if rup is None:
            rup = self._read[name] = self._meters[name].rup_at(self._at)
        return rup

    def __iter__(self) -> Iterator[str]:
        return iter(self._meters)

    def __len__(self) -> int:
        return len(self._meters)
