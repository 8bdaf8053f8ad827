"""Token buckets by name (a cluster, a job): how many bytes of output each may ship now.

A bucket that has filled up again is dropped, so memory follows the names shipping output now,
not every job that ever printed.
"""

from __future__ import annotations


class Buckets:
    def __init__(self, rate: float, burst_seconds: float = 5.0) -> None:
        self.rate = rate
        self.capacity = rate * burst_seconds
        self._level: dict[str, tuple[float, float]] = {}  # name -> (bytes left, as of when)

    def left(self, name: str, now: float) -> int:
        level, since = self._level.get(name, (self.capacity, now))
        return int(min(self.capacity, level + max(0.0, now - since) * self.rate))

    def spend(self, name: str, amount: int, now: float) -> None:
        level = self.left(name, now) - amount
        if level >= self.capacity:
            self._level.pop(name, None)
        else:
            self._level[name] = (float(level), now)

    def forget_full(self, now: float) -> None:
        for name in [n for n in self._level if self.left(n, now) >= self.capacity]:
            del self._level[name]
