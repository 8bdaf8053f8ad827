"""One generic dispatcher for every hook, instead of one tier loop per hook.

Each hook kind has a mode that says how the tiers' plugins combine:

- ORDER: plugins give sort keys; the combined key is their tuple (first plugin that differs decides).
- CHECK: plugins return None (no objection) or a reason; the first reason wins, in tier order.
- ALL:   plugins return bools; all must agree (no plugin = True).
- ANY:   plugins return reasons or None; any reason means yes (used for ``overused``).
- VOTE:  plugins return +1 / 0 / -1; within a tier any -1 rejects, any +1 permits; else next tier.
- SCORE: plugins return numbers, summed.
- VICTIMS: plugins return the candidates they allow; every tier votes, so a victim must be allowed
  by all of them (evicting is the one decision where any plugin's objection must hold).
- EVENT: every handler is called.

Every call is timed against its plugin, so the session reports seconds per plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from time import perf_counter
from typing import Any


class Mode(Enum):
    ORDER = "order"
    CHECK = "check"
    ALL = "all"
    ANY = "any"
    VOTE = "vote"
    SCORE = "score"
    VICTIMS = "victims"
    EVENT = "event"


HOOKS: dict[str, Mode] = {
    "job_order": Mode.ORDER,
    "task_order": Mode.ORDER,
    "queue_order": Mode.ORDER,
    "tenant_order": Mode.ORDER,
    "predicate": Mode.CHECK,
    "job_valid": Mode.CHECK,
    "job_enqueueable": Mode.CHECK,
    "job_reservable": Mode.CHECK,
    "allocatable": Mode.CHECK,
    "overused": Mode.ANY,
    "job_ready": Mode.ALL,
    "job_starving": Mode.ALL,
    "job_pipelined": Mode.VOTE,
    "node_order": Mode.SCORE,
    "preemptable": Mode.VICTIMS,
    "reclaimable": Mode.VICTIMS,
    "on_allocate": Mode.EVENT,
    "on_deallocate": Mode.EVENT,
}

PERMIT, ABSTAIN, REJECT = 1, 0, -1

Fn = Callable[..., Any]


class _Entry:
    __slots__ = ("plugin", "fn", "tier")

    def __init__(self, plugin: str, fn: Fn, tier: int) -> None:
        self.plugin = plugin
        self.fn = fn
        self.tier = tier


class Hooks:
    """The hook tables of one session, and the one dispatcher over them."""

    def __init__(self) -> None:
        self._table: dict[str, list[_Entry]] = {name: [] for name in HOOKS}
        self.seconds: dict[str, float] = {}

    def add(self, hook: str, plugin: str, tier: int, fn: Fn) -> None:
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}")
        self._table[hook].append(_Entry(plugin, fn, tier))
        self.seconds.setdefault(plugin, 0.0)

    def has(self, hook: str) -> bool:
        return bool(self._table[hook])

    def charge(self, plugin: str, seconds: float) -> None:
        self.seconds[plugin] = self.seconds.get(plugin, 0.0) + seconds

    def call(self, hook: str, *args: Any) -> Any:
        """Run ``hook`` over the tiers according to its mode."""
        entries = self._table[hook]
        mode = HOOKS[hook]
        seconds = self.seconds
        if mode is Mode.ORDER:
            keys = []
            for e in entries:
                t0 = perf_counter()
                keys.append(e.fn(*args))
                seconds[e.plugin] += perf_counter() - t0
            return tuple(keys)
        if mode is Mode.SCORE:
            score = 0.0
            for e in entries:
                t0 = perf_counter()
                score += e.fn(*args)
                seconds[e.plugin] += perf_counter() - t0
            return score
        if mode is Mode.VOTE:
            return self._vote(entries, args)
        if mode is Mode.VICTIMS:
            return self._victims(entries, args)
        for e in entries:
            t0 = perf_counter()
            out = e.fn(*args)
            seconds[e.plugin] += perf_counter() - t0
            if mode is Mode.ALL:
                if not out:
                    return False
            elif mode is not Mode.EVENT and out is not None:
                return (e.plugin, out)
        return True if mode is Mode.ALL else None

    def _vote(self, entries: Sequence[_Entry], args: tuple[Any, ...]) -> bool | None:
        tier = None
        permitted = False
        for e in entries:
            if e.tier != tier:
                if permitted:
                    return True
                tier = e.tier
            t0 = perf_counter()
            vote = e.fn(*args)
            self.seconds[e.plugin] += perf_counter() - t0
            if vote == REJECT:
                return False
            permitted = permitted or vote == PERMIT
        return True if permitted else None

    def _victims(self, entries: Sequence[_Entry], args: tuple[Any, ...]) -> list[Any] | None:
        chosen: list[Any] | None = None
        for e in entries:
            t0 = perf_counter()
            allowed = e.fn(*args)
            self.seconds[e.plugin] += perf_counter() - t0
            if chosen is None:
                chosen = list(allowed)
            else:
                keep = {id(v) for v in allowed}
                chosen = [v for v in chosen if id(v) in keep]
        return chosen
