"""Time profiles for reservations and backfill.

A ``TimeProfile`` is one node's (or cluster's) free resources over time, a step function built
from what is idle now and the expected ends of running tasks (its ``Releases``). The
``ReservationBook`` holds one per node, books reservations into them (EASY, depth N or
conservative, by how many are booked), and answers the backfill question: may a job start on this
node now without delaying any reservation? Only nodes that carry a reservation need the window
check: elsewhere free resources only grow with time, so fitting now means fitting for the whole
walltime. For the same reason a node's profile is built only once it carries a reservation (or a
sweep over every node needs it): the earliest start of a job on one node is found by bisecting
its releases, so a federation of clusters running 50,000 jobs does not walk them every cycle.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter

from policies import resources as res
from policies.framework.decisions import Reservation
from policies.resources import EPS, Resources
from policies.snapshot import OCCUPYING, JobInfo, TaskStatus

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
        return copies(self.min_free(t0, t1), req)


def copies(free: Resources, req: Resources) -> int:
    """How many copies of ``req`` fit in ``free``."""
    best = INF
    for name, qty in req.items():
        if qty > EPS:
            best = min(best, math.floor((free.get(name, 0.0) + EPS) / qty))
    return 0 if best == INF else max(0, int(best))


class Releases:
    """What a node's running tasks free, and when: their expected ends in time order, equal times
    folded into one step. Immutable, so a caller may keep one per node across cycles and rebuild it
    only when the node's tasks change (the federation does, per cluster)."""

    __slots__ = ("times", "amounts", "_freed")

    def __init__(self, ends: Iterable[tuple[float, Resources]]) -> None:
        self.times: list[float] = []
        self.amounts: list[Resources] = []
        for t, amount in sorted((end for end in ends if end[0] < INF), key=itemgetter(0)):
            if self.times and self.times[-1] == t:
                res.iadd(self.amounts[-1], amount)
            else:
                self.times.append(t)
                self.amounts.append(dict(amount))
        self._freed: list[Resources] | None = None

    def _freed_by(self) -> list[Resources]:
        """What is freed by each end and all before it, for reading a time without a profile (worked
        out on first use: a node that holds a reservation is read through its profile instead)."""
        if self._freed is None:
            self._freed = []
            running: Resources = {}
            for amount in self.amounts:
                running = res.add(running, amount)
                self._freed.append(running)
        return self._freed

    def profile(self, now: float, idle: Resources) -> TimeProfile:
        """Free resources from ``now`` on; tasks already past their expected end count as free now."""
        profile = TimeProfile(now, idle)
        for t, amount in zip(self.times, self.amounts, strict=True):
            if t > profile.times[-1]:
                profile.times.append(t)
                profile.free.append(dict(profile.free[-1]))
            res.iadd(profile.free[-1], amount)
        return profile

    def free_at(self, t: float, idle: Resources) -> Resources:
        k = bisect.bisect_right(self.times, t)
        return res.add(idle, self._freed_by()[k - 1]) if k else dict(idle)


NO_RELEASES = Releases(())


def releases_of(jobs: Iterable[JobInfo]) -> dict[str, Releases]:
    """Per node, when the running tasks of ``jobs`` free what they hold."""
    ends: dict[str, list[tuple[float, Resources]]] = {}
    for job in jobs:
        for t in job.tasks:
            if t.status in OCCUPYING and t.status != TaskStatus.RELEASING and t.expected_end is not None:
                ends.setdefault(t.node, []).append((t.expected_end, t.resources))
    return {node: Releases(steps) for node, steps in ends.items()}


class ReservationBook:
    def __init__(self, now: float, idle: dict[str, Resources], releases: Mapping[str, Releases]) -> None:
        """``idle``: free per node now; ``releases``: when each node's running tasks free what they hold."""
        self.now = now
        self.idle = idle
        self.releases = releases
        self.profiles: dict[str, TimeProfile] = {}
        self.reserved_nodes: set[str] = set()
        self.reservations: list[Reservation] = []
        self._later: dict[str, list[tuple[float, float, Resources, float]]] = {}

    def release(self, node: str, at: float, amount: Resources) -> None:
        """A task this session placed before the book was opened frees ``amount`` at ``at``."""
        if node in self.idle and at < INF:
            self._later.setdefault(node, []).append((max(at, self.now), INF, amount, 1.0))

    def consume(self, node: str, amount: Resources, t0: float, t1: float, times: float = 1.0) -> None:
        """A task starts on ``node`` now (times=1) or is rolled back (times=-1). Applied when the
        node's profile is next read: most nodes never are, once they hold no reservation."""
        if node in self.idle:
            self._later.setdefault(node, []).append((t0, t1, amount, -times))

    def profile(self, node: str) -> TimeProfile:
        profile = self.profiles.get(node)
        if profile is None:
            profile = self.profiles[node] = self.releases.get(node, NO_RELEASES).profile(self.now, self.idle[node])
        for t0, t1, amount, times in self._later.pop(node, ()):
            profile.add(t0, t1, amount, times)
        return profile

    def _first_fit(self, node: str, req: Resources, count: int) -> float | None:
        """When ``count`` copies of ``req`` first fit on a node without a reservation: its free
        resources only grow from now on (what this session starts ends later; what it placed before
        the book frees later), so the first such moment is found by bisecting its releases."""
        releases = self.releases.get(node, NO_RELEASES)
        later = self._later.get(node, ())
        idle = self.idle[node]

        def fits_at(t: float) -> bool:
            free = releases.free_at(t, idle)
            for t0, t1, amount, times in later:
                if t0 <= t < t1:
                    res.iadd(free, amount, times)
            return copies(free, req) >= count

        if fits_at(self.now):
            return self.now
        times = releases.times
        lo, hi = bisect.bisect_right(times, self.now), len(times)
        while lo < hi:
            mid = (lo + hi) // 2
            if fits_at(times[mid]):
                hi = mid
            else:
                lo = mid + 1
        first = times[lo] if lo < len(times) else None
        for t in sorted({t for t0, t1, _, _ in later for t in (t0, t1) if self.now < t < INF}):
            if first is not None and t >= first:
                break
            if fits_at(t):
                return t
        return first

    def allows(self, node: str, req: Resources, start: float, walltime: float | None) -> bool:
        if node not in self.reserved_nodes:
            return True
        end = start + (walltime if walltime is not None else INF)
        return res.fits(req, self.profile(node).min_free(start, end))

    def earliest(
        self, nodes: Sequence[str], req: Resources, count: int, walltime: float | None, whole: bool
    ) -> tuple[float, dict[str, int]] | None:
        """Earliest start at which ``count`` tasks of size ``req`` fit for ``walltime``: all on one
        node when ``whole`` (the first of ``nodes`` on a tie), else spread, sweeping the nodes'
        breakpoints in time order. Nodes without a reservation only gain resources over time, so
        each is re-counted only at its own breakpoints; reserved nodes are re-counted at every step."""
        span = walltime if walltime is not None else INF
        if whole:
            return self._earliest_on_one(nodes, req, count, span)
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
            if total >= count:
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

    def _earliest_on_one(
        self, nodes: Sequence[str], req: Resources, count: int, span: float
    ) -> tuple[float, dict[str, int]] | None:
        """A node's window can only close as it stretches within one of its segments, so its first
        fit is at one of its own breakpoints; a node whose profile was never needed (it holds no
        reservation) is bisected instead."""
        best: tuple[float, str] | None = None
        for name in nodes:
            if name in self.profiles:
                profile = self.profile(name)
                t = next((t for t in profile.times if profile.count(req, t, t + span) >= count), None)
            else:
                t = self._first_fit(name, req, count)
            if t is not None and (best is None or t < best[0]):
                best = (t, name)
        return None if best is None else (best[0], {best[1]: count})

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
