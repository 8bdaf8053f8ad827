"""Real priorities as they were: rebuilt from the usage history, for reports over a window.

The meters hold only today's RUPs. Each history bucket says how many unit-seconds a series used in
it; read as a constant rate over the bucket, HTCondor's rule ``RUP(t) = b*RUP(t-dt) + (1-b)*rho``,
``b = 0.5**(dt/halfLife)``, run forward from the oldest bucket (every RUP starts at the 0.5 floor,
as a new meter does) gives each tenant's and queue's RUP at any time. Exact when the rate was
constant over each bucket (per minute over the last day by default); otherwise off by less than one
bucket's usage, decayed. Usage older than the history's retention is not counted: it has decayed away.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from federation.accounting.accountant import queue_ancestry
from federation.accounting.meter import Meter
from federation.accounting.snapshot import AccountingSnapshot
from policies.shares import RUP_FLOOR, decay_rup

Cell = tuple[float, float, float]
"""(start, width, unit-seconds) of one history bucket."""


@dataclass(frozen=True)
class PastPriorities:
    """The fair-share inputs at ``time``: what ``AccountingSnapshot`` answers for now, for then.
    Priority factors and weights are today's: their changes are not recorded."""

    time: float
    weights: Mapping[str, float]
    tenant_rups: Mapping[str, float]
    queue_rups: Mapping[str, float]
    factors: Mapping[str, float]

    def rup(self, tenant: str) -> float:
        return self.tenant_rups.get(tenant, RUP_FLOOR)

    def queue_rup(self, queue: str) -> float:
        return self.queue_rups.get(queue, RUP_FLOOR)

    def factor(self, tenant: str) -> float:
        return self.factors.get(tenant, 1.0)


def past_priorities(snapshot: AccountingSnapshot, times: Sequence[float]) -> list[PastPriorities]:
    """The tenants' and queues' RUPs at each of ``times`` (ascending), from ``snapshot``'s history."""
    tenant_cells: dict[str, list[Cell]] = {}
    queue_cells: dict[str, list[Cell]] = {}
    for key, history in snapshot.history.items():
        tenant, queue, _ = key
        meter = snapshot.series.get(key)
        now_units = 0.0 if meter is None else meter.units
        cells = [_until_now(c, snapshot.time, now_units) for c in history.cells() if c[2] and c[2][0]]
        tenant_cells.setdefault(tenant, []).extend(cells)
        for path in queue_ancestry(queue):
            queue_cells.setdefault(path, []).extend(cells)
    tenants = _rups(tenant_cells, snapshot.tenants, times)
    queues = _rups(queue_cells, snapshot.queues, times)
    return [
        PastPriorities(
            time,
            snapshot.weights,
            {t: rups[k] for t, rups in tenants.items()},
            {q: rups[k] for q, rups in queues.items()},
            snapshot.factors,
        )
        for k, time in enumerate(times)
    ]


def _until_now(bucket: tuple[float, float, list[float]], now: float, units: float) -> Cell:
    """A bucket as a cell; the one ``now`` is in ends at ``now``, and holds the series' rate of now
    (``units``) for as long as its usage lasts at that rate: a job started seconds ago is not spread
    over the whole minute (below the 0.5 floor, a spread rate would not move the RUP at all)."""
    start, width, cell = bucket
    unit_seconds = cell[0]
    if start + width <= now or start >= now:
        return start, width, unit_seconds
    held = now - start if units <= 0 else min(now - start, unit_seconds / units)
    return now - held, held, unit_seconds


def _rups(
    cells: Mapping[str, list[Cell]], meters: Mapping[str, Meter], times: Sequence[float]
) -> dict[str, list[float]]:
    """Per entity with a meter (which knows its half-life), its RUPs at ``times``."""
    out = {}
    for name, own in cells.items():
        half_life = meters[name].half_life if name in meters else None
        if half_life is not None:
            out[name] = rups_at(own, times, half_life)
    return out


def rups_at(cells: Iterable[Cell], times: Sequence[float], half_life: float) -> list[float]:
    """The RUP at each of ``times`` (ascending) of an entity whose usage is ``cells``, each spread
    evenly over its bucket; overlapping cells (several series) add up."""
    changes: dict[float, float] = {}
    for start, width, unit_seconds in cells:
        rate = unit_seconds / width
        changes[start] = changes.get(start, 0.0) + rate
        changes[start + width] = changes.get(start + width, 0.0) - rate
    points = sorted(changes)
    rup, rate, last = RUP_FLOOR, 0.0, float("-inf")
    out: list[float] = []
    i = 0
    for time in times:
        while i < len(points) and points[i] <= time:
            rup = _decayed(rup, rate, points[i] - last, half_life)
            last, rate = points[i], max(rate + changes[points[i]], 0.0)  # sums of +/- rates leave dust
            i += 1
        rup = _decayed(rup, rate, time - last, half_life)
        last = max(last, time)
        out.append(rup)
    return out


def _decayed(rup: float, rate: float, dt: float, half_life: float) -> float:
    """One step of the rule; from before the first usage (``dt`` infinite) nothing has happened yet."""
    if dt <= 0 or dt == float("inf"):
        return rup
    return decay_rup(rup, rate, dt, half_life)
