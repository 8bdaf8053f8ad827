"""A frozen copy of the accounting at one instant, what reports and metrics read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from federation.accounting.history import Amounts, History
from federation.accounting.meter import Meter
from policies.shares import RUP_FLOOR, effective_priority

SeriesKey = tuple[str, str, str]
"""(tenant, leaf queue, cluster): the finest grain the accounting keeps history for."""

SeriesFilter = Callable[[SeriesKey], bool]


def every_series(_: SeriesKey) -> bool:
    return True


@dataclass(frozen=True)
class AccountingSnapshot:
    """Meters advanced to ``time``: current allocation, accumulated usage, RUPs and history."""

    time: float
    weights: dict[str, float]
    tenants: dict[str, Meter] = field(default_factory=dict)
    queues: dict[str, Meter] = field(default_factory=dict)
    series: dict[SeriesKey, Meter] = field(default_factory=dict)
    history: dict[SeriesKey, History] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)

    def factor(self, tenant: str) -> float:
        return self.factors.get(tenant, 1.0)

    def rup(self, tenant: str) -> float:
        meter = self.tenants.get(tenant)
        return RUP_FLOOR if meter is None else meter.rup

    def eup(self, tenant: str) -> float:
        """Effective user priority as HTCondor defines it: RUP x priority factor."""
        return effective_priority(self.rup(tenant), self.factor(tenant))

    def queue_rup(self, queue: str) -> float:
        meter = self.queues.get(queue)
        return RUP_FLOOR if meter is None else meter.rup

    def first_usage(self, keep: SeriesFilter = every_series) -> float | None:
        """When the oldest recorded usage of the kept series began (None: none is recorded)."""
        starts = [start for key, h in self.history.items() if keep(key) and (start := h.first()) is not None]
        return min(starts) if starts else None

    def window(self, since: float, until: float, keep: SeriesFilter = every_series) -> dict[SeriesKey, Amounts]:
        """Usage of each kept series over ``[since, until]`` from its history buckets."""
        return {key: self.history[key].binned([since, until])[0] for key in self.history if keep(key)}

    def binned(self, edges: Sequence[float], keep: SeriesFilter = every_series) -> dict[SeriesKey, list[Amounts]]:
        return {key: self.history[key].binned(edges) for key in self.history if keep(key)}
