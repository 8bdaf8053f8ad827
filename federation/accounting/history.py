"""Downsampled usage history of one series: resource-seconds in time buckets of a few widths.

New usage lands in the finest tier (per minute by default). A bucket moves into the next tier's
bucket that contains it once that whole coarser bucket is older than the tier's ``keep`` (per
minute for the last day, per hour for the last 30 days, per day beyond). Moving only adds numbers
into a bucket that covers the same time, so totals over whole coarse buckets never change; buckets
that end more than ``retention`` ago are dropped.

Reading a window: a bucket inside it counts whole; a bucket the window cuts counts in proportion to
the overlap, as if usage were spread evenly over the bucket (exact when the window starts and ends
on bucket bounds, or when the rate was constant over the bucket).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0


@dataclass(frozen=True, slots=True)
class Tier:
    """Buckets ``width`` seconds wide, kept at this width while younger than ``keep`` (None: for ever)."""

    width: float
    keep: float | None


DEFAULT_TIERS = (Tier(MINUTE, DAY), Tier(HOUR, 30 * DAY), Tier(DAY, None))
DEFAULT_RETENTION = 400 * DAY
PENDING_LIMIT = 256
"""Segments a series keeps unbucketed between flushes: events are cheap, reads and saves flush."""


def check_tiers(tiers: Sequence[Tier]) -> None:
    """Each width must divide the next (so a coarse bucket is a union of fine ones); only the last keeps for ever."""
    if not tiers:
        raise ValueError("at least one history tier is needed")
    for fine, coarse in zip(tiers, tiers[1:], strict=False):
        ratio = coarse.width / fine.width
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(f"tier width {coarse.width:g} s is not a multiple of {fine.width:g} s")
        if fine.keep is None:
            raise ValueError("only the last history tier may keep its buckets for ever")
    if any(tier.width <= 0 for tier in tiers):
        raise ValueError("history tier widths must be positive")


@dataclass(frozen=True, slots=True)
class Amounts:
    """Weighted unit-seconds and resource-seconds per resource."""

    unit_seconds: float
    seconds: dict[str, float]


class History:
    """The buckets of one series. A cell is ``[unit-seconds, seconds of resources[0], ...]``."""

    __slots__ = ("tiers", "resources", "_index", "buckets", "dirty", "_pending")

    def __init__(self, tiers: Sequence[Tier] = DEFAULT_TIERS) -> None:
        self.tiers = tuple(tiers)
        self.resources: list[str] = []
        self._index: dict[str, int] = {}
        # Per tier, bucket start -> cell, in time order (``_write`` sorts again after a late event's usage).
        self.buckets: list[dict[float, list[float]]] = [{} for _ in self.tiers]
        self.dirty: set[tuple[int, float]] = set()  # (tier, chunk start) changed since the last save
        self._pending: list[tuple[float, float, float, dict[str, float]]] = []

    def add(self, start: float, end: float, units: float, rates: Mapping[str, float]) -> None:
        """Record a constant allocation over ``[start, end)``. Kept as a segment until ``flush``
        (by ``compact``, a read, or every ``PENDING_LIMIT`` segments)."""
        if end <= start or (units == 0 and not any(rates.values())):
            return
        self._pending.append((start, end, units, dict(rates)))
        if len(self._pending) >= PENDING_LIMIT:
            self.flush(end)

    def flush(self, now: float | None = None) -> None:
        """Write pending segments into buckets, split exactly at bucket bounds, each part straight
        into the tier its age puts it in at ``now`` (default: the last segment's end), so old usage
        never costs one write per minute."""
        if not self._pending:
            return
        at = max(end for _, end, _, _ in self._pending) if now is None else now
        # Older buckets move first, so each tier's buckets stay in time order after the writes below.
        self._promote(at)
        # Times from cuts[L] up to cuts[L-1] belong to tier L: the finest tier keeps what its coarser
        # bucket has not yet left (see ``compact``), the last tier everything older.
        cuts = [math.inf]
        for level, tier in enumerate(self.tiers[:-1]):
            assert tier.keep is not None
            coarse = self.tiers[level + 1].width
            cuts.append(min(cuts[-1], math.floor((at - tier.keep) / coarse) * coarse))
        cuts.append(-math.inf)
        for start, end, units, rates in self._pending:
            vector = [units] + [0.0] * len(self.resources)
            for name, rate in rates.items():
                slot = self._slot(name)
                vector.extend([0.0] * (slot + 1 - len(vector)))
                vector[slot] = rate
            for level in reversed(range(len(self.tiers))):
                lo, hi = max(start, cuts[level + 1]), min(end, cuts[level])
                if lo < hi:
                    self._write(level, lo, hi, vector)
        self._pending.clear()

    def _write(self, level: int, start: float, end: float, vector: Sequence[float]) -> None:
        width = self.tiers[level].width
        cells = self.buckets[level]
        count, newest = len(cells), next(reversed(cells), -math.inf)
        bucket = math.floor(start / width) * width
        while bucket < end:
            overlap = min(end, bucket + width) - max(start, bucket)
            _accumulate(cells.setdefault(bucket, []), vector, overlap)
            self._touch(level, bucket)
            bucket += width
        if len(cells) > count and start < newest:  # a late event's usage made a bucket before the newest
            self.buckets[level] = dict(sorted(cells.items()))

    def compact(self, now: float, retention: float | None) -> None:
        """Move buckets whose coarser bucket is past the tier's ``keep``; drop those past ``retention``."""
        self.flush(now)
        self._promote(now)
        if retention is not None:
            for level, (tier, cells) in enumerate(zip(self.tiers, self.buckets, strict=True)):
                while cells and next(iter(cells)) + tier.width <= now - retention:
                    start = next(iter(cells))
                    del cells[start]
                    self._touch(level, start)

    def _promote(self, now: float) -> None:
        """Move each bucket into its coarser bucket once that one ends more than ``keep`` before ``now``."""
        for level, tier in enumerate(self.tiers[:-1]):
            assert tier.keep is not None
            coarse_width = self.tiers[level + 1].width
            fine, coarse = self.buckets[level], self.buckets[level + 1]
            while fine:
                start = next(iter(fine))
                parent = math.floor(start / coarse_width) * coarse_width
                if parent + coarse_width > now - tier.keep:
                    break
                _accumulate(coarse.setdefault(parent, []), fine.pop(start))
                self._touch(level, start)
                self._touch(level + 1, parent)

    def cells(self) -> Iterator[tuple[float, float, list[float]]]:
        """Every bucket as (start, width, cell), coarse tiers first."""
        self.flush()
        for tier, cells in zip(reversed(self.tiers), reversed(self.buckets), strict=True):
            for start, cell in cells.items():
                yield start, tier.width, cell

    def first(self) -> float | None:
        """The start of the oldest bucket (None: no usage recorded)."""
        self.flush()
        starts = [next(iter(cells)) for cells in self.buckets if cells]
        return min(starts) if starts else None

    def total(self) -> Amounts:
        return self.binned([-math.inf, math.inf])[0]

    def binned(self, edges: Sequence[float]) -> list[Amounts]:
        """Usage in each ``[edges[i], edges[i+1])``, partial buckets in proportion to their overlap."""
        self.flush()
        sums = [[0.0] * (len(self.resources) + 1) for _ in range(max(len(edges) - 1, 0))]
        for start, width, cell in self.cells():
            end = start + width
            i = max(bisect_right(edges, start) - 1, 0)
            while i < len(sums) and edges[i] < end:
                overlap = min(end, edges[i + 1]) - max(start, edges[i])
                if overlap > 0:
                    fraction = 1.0 if overlap >= width else overlap / width
                    row = sums[i]
                    for k, amount in enumerate(cell):
                        row[k] += amount * fraction
                i += 1
        return [
            Amounts(row[0], {name: row[k + 1] for k, name in enumerate(self.resources) if row[k + 1]}) for row in sums
        ]

    def _slot(self, name: str) -> int:
        slot = self._index.get(name)
        if slot is None:
            self.resources.append(name)
            slot = self._index[name] = len(self.resources)
        return slot

    def copy(self) -> History:
        self.flush()
        other = History(self.tiers)
        other.resources = list(self.resources)
        other._index = dict(self._index)
        other.buckets = [{start: list(cell) for start, cell in cells.items()} for cells in self.buckets]
        other.dirty = set(self.dirty)
        return other

    def chunk_width(self, level: int) -> float:
        """Buckets are stored a chunk at a time: one coarser bucket's worth (an hour of minutes, a
        day of hours), a year of the last tier's; a save rewrites only the chunks that changed."""
        if level + 1 < len(self.tiers):
            return self.tiers[level + 1].width
        return self.tiers[level].width * 366

    def take_dirty(self) -> list[tuple[float, float, dict[str, Any] | None]]:
        """(tier width, chunk start, chunk or None if now empty) of each chunk changed since the last call."""
        self.flush()
        out = [(self.tiers[level].width, chunk, self.encode_chunk(level, chunk)) for level, chunk in sorted(self.dirty)]
        self.dirty.clear()
        return out

    def encode_chunk(self, level: int, chunk: float) -> dict[str, Any] | None:
        """Compact JSON: resource names once, then ``[start, unit-seconds, seconds...]`` rows."""
        width, cells = self.tiers[level].width, self.buckets[level]
        rows = []
        for k in range(round(self.chunk_width(level) / width)):
            cell = cells.get(chunk + k * width)
            if cell is not None:
                rows.append([chunk + k * width, *cell])
        return {"r": self.resources, "b": rows} if rows else None

    def absorb(self, width: float, data: Mapping[str, Any]) -> bool:
        """Add one stored chunk. Buckets of a width no longer configured go to the next wider tier
        (and are marked to be written again); returns whether the chunk's width is configured."""
        level = next((i for i, tier in enumerate(self.tiers) if tier.width >= width), len(self.tiers) - 1)
        tier_width = self.tiers[level].width
        slots = [0] + [self._slot(str(name)) for name in data["r"]]
        for row in data["b"]:
            start = math.floor(float(row[0]) / tier_width) * tier_width
            vector = [0.0] * (max(slots) + 1)
            for slot, amount in zip(slots, row[1:], strict=False):
                vector[slot] = float(amount)
            _accumulate(self.buckets[level].setdefault(start, []), vector)
            if tier_width != width:
                self._touch(level, start)
        return tier_width == width

    def settle(self) -> None:
        """Put buckets back in time order after chunks were absorbed in any order."""
        self.buckets = [dict(sorted(cells.items())) for cells in self.buckets]

    def _touch(self, level: int, start: float) -> None:
        width = self.chunk_width(level)
        self.dirty.add((level, math.floor(start / width) * width))


def _accumulate(cell: list[float], values: Sequence[float], times: float = 1.0) -> None:
    """``cell += times * values``, growing ``cell`` when a resource was first seen after it was made."""
    if len(cell) < len(values):
        cell.extend([0.0] * (len(values) - len(cell)))
    for i, amount in enumerate(values):
        cell[i] += amount * times
