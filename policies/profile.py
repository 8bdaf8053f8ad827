"""Time profiles for reservations and backfill.

A ``TimeProfile`` is one node's (or cluster's) free resources over time, a step function built
from what is idle now and the expected ends of running tasks. The ``ReservationBook`` holds one
per node, books reservations into them (EASY, depth N or conservative, by how many are booked),
and answers the backfill question: may a job start on this node now without delaying any
reservation? Only nodes that carry a reservation need the window check: elsewhere free resources
only grow with time, so fitting now means fitting for the whole walltime.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from policies import resources as res
from policies.framework.decisions import Reservation
from policies.resources import EPS, Resources

INF = math.inf


class TimeProfile:
    __slots__ = ("times", "free")

    def __init__(self, now: float, free: Resources) -> None:
        self.times = [now]
        self.free = [dict(free)]

    def _split(self, t: float) -> int:
        """Index of the segment starting at ``t``, inserting a breakpoint if there is none."""
        if t == INF:
            return len(self.times)
        t = max(t, self.times[0])
        k = bisect.bisect_left(self.times, t)
        if k < len(self.times) and self.times[k] == t:
            return k
        self.times.insert(k, t)
        self.free.insert(k, dict(self.free[k - 1]))
        return k

    def add(self, t0: float, t1: float, amount: Resources, times: float = 1.0) -> None:
        """Free resources change by ``times * amount`` over [t0, t1)."""
        if t1 <= t0:
            return
        start, end = self._split(t0), self._split(t1)
        for k in range(start, end):
            res.iadd(self.free[k], amount, times)

    def min_free(self, t0: float, t1: float) -> Resources:
        """Per resource, the least that is free at any moment of [t0, t1)."""
        k = max(0, bisect.bisect_right(self.times, t0) - 1)
        out = dict(self.free[k])
        k += 1
        while k < len(self.times) and self.times[k] < t1:
            for name, qty in self.free[k].items():
                if qty < out.get(name, INF):
                    out[name] = qty
            k += 1
        return out

    def count(self, req: Resources, t0: float, t1: float) -> int:
        """How many copies of ``req`` fit for the whole of [t0, t1)."""
        free = self.min_free(t0, t1)
        best = INF
        for name, qty in req.items():
            if qty > EPS:
                best = min(best, math.floor((free.get(name, 0.0) + EPS) / qty))
        return 0 if best == INF else max(0, int(best))


class ReservationBook:
    def __init__(self, now: float, idle: dict[str, Resources], ends: Iterable[tuple[str, float, Resources]]) -> None:
        """``idle``: free per node now; ``ends``: (node, time, resources) a running task frees."""
        self.now = now
        self.profiles = {name: TimeProfile(now, free) for name, free in idle.items()}
        by_node: dict[str, list[tuple[float, Resources]]] = {}
        for node, t, amount in ends:
            if node in self.profiles and t < INF:
                by_node.setdefault(node, []).append((max(t, now), amount))
        for node, steps in by_node.items():
            profile = self.profiles[node]
            steps.sort(key=lambda step: step[0])
            for t, amount in steps:
                if t > profile.times[-1]:
                    profile.times.append(t)
                    profile.free.append(dict(profile.free[-1]))
                res.iadd(profile.free[-1], amount)
        self.reserved_nodes: set[str] = set()
        self.reservations: list[Reservation] = []
        self._later: dict[str, list[tuple[float, float, Resources, float]]] = {}

    def consume(self, node: str, amount: Resources, t0: float, t1: float, times: float = 1.0) -> None:
        """A task starts on ``node`` now (times=1) or is rolled back (times=-1). Applied when the
        node's profile is next read: most nodes never are, once they hold no reservation."""
        if node in self.profiles:
            self._later.setdefault(node, []).append((t0, t1, amount, -times))

    def profile(self, node: str) -> TimeProfile:
        profile = self.profiles[node]
        for t0, t1, amount, times in self._later.pop(node, ()):
            profile.add(t0, t1, amount, times)
        return profile

    def allows(self, node: str, req: Resources, start: float, walltime: float | None) -> bool:
        if node not in self.reserved_nodes:
            return True
        end = start + (walltime if walltime is not None else INF)
        return res.fits(req, self.profile(node).min_free(start, end))

    def earliest(
        self, nodes: Sequence[str], req: Resources, count: int, walltime: float | None, whole: bool
    ) -> tuple[float, dict[str, int]] | None:
        """Earliest start at which ``count`` tasks of size ``req`` fit for ``walltime`` (all on one
        node when ``whole``), sweeping the nodes' breakpoints in time order. Nodes without a
        reservation only gain resources over time, so each is re-counted only at its own
        breakpoints; reserved nodes are re-counted at every step."""
        span = walltime if walltime is not None else INF
        events: list[tuple[float, str]] = []
        for name in nodes:
            events.extend((t, name) for t in self.profile(name).times if t >= self.now)
        events.sort()
        dipped = [n for n in nodes if n in self.reserved_nodes]
        counts: dict[str, int] = {}
        total = 0
        i = 0
        while i < len(events):
            t = events[i][0]
            touched = set(dipped)
            while i < len(events) and events[i][0] == t:
                touched.add(events[i][1])
                i += 1
            for name in touched:
                n = self.profiles[name].count(req, t, t + span)
                total += n - counts.get(name, 0)
                counts[name] = n
                if whole and n >= count:
                    return t, {name: count}
            if not whole and total >= count:
                picked: dict[str, int] = {}
                need = count
                # Nodes busy now first: leave what is free now to backfill (EASY's "extra nodes").
                for name, n in sorted(
                    counts.items(), key=lambda kv: (self.profiles[kv[0]].count(req, self.now, self.now), -kv[1])
                ):
                    if need <= 0:
                        break
                    if n > 0:
                        picked[name] = min(n, need)
                        need -= picked[name]
                return t, picked
        return None

    def reserve(
        self, job: str, start: float, walltime: float | None, req: Resources, nodes: dict[str, int]
    ) -> Reservation:
        end = start + (walltime if walltime is not None else INF)
        for name, n in nodes.items():
            self.profile(name).add(start, end, req, -float(n))
            self.reserved_nodes.add(name)
        booked = Reservation(job, dict(nodes), start, end, dict(req))
        self.reservations.append(booked)
        return booked
