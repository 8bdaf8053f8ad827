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

Every call is timed against its plugin, so the session reports seconds per plugin. Hooks are
called millions of times a run, so each hook's dispatcher is built when a plugin registers for it,
specialised to its mode and to the common case of a single plugin, instead of walking the modes on
every call; timing the plugins in turn reads the clock once per plugin plus once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
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
    """The hook tables of one session, and a dispatcher per hook built over them."""

    def __init__(self) -> None:
        self._table: dict[str, list[_Entry]] = {name: [] for name in HOOKS}
        self.seconds: dict[str, float] = {}
        self._calls: dict[str, Fn] = {name: self._dispatcher(name) for name in HOOKS}

    def add(self, hook: str, plugin: str, tier: int, fn: Fn) -> None:
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}")
        self._table[hook].append(_Entry(plugin, fn, tier))
        self.seconds.setdefault(plugin, 0.0)
        self._calls[hook] = self._dispatcher(hook)

    def has(self, hook: str) -> bool:
        return bool(self._table[hook])

    def charge(self, plugin: str, seconds: float) -> None:
        self.seconds[plugin] = self.seconds.get(plugin, 0.0) + seconds

    def call(self, hook: str, *args: Any) -> Any:
        """Run ``hook`` over the tiers according to its mode."""
        return self._calls[hook](*args)

    def _dispatcher(self, hook: str) -> Fn:
        entries = list(self._table[hook])
        mode = HOOKS[hook]
        if mode is Mode.VOTE:
            return lambda *args: self._vote(entries, args)
        if mode is Mode.VICTIMS:
            return lambda *args: self._victims(entries, args)
        if len(entries) == 1:
            return _single(mode, entries[0], self.seconds)
        run = _timed(entries, self.seconds)
        if mode is Mode.ORDER:
            return lambda *args: tuple(run(args))
        if mode is Mode.SCORE:
            return lambda *args: _add_up(run(args))
        if mode is Mode.EVENT:
            return lambda *args: _drain(run(args))
        if mode is Mode.ALL:
            return lambda *args: all(run(args))
        return lambda *args: _first_reason(entries, run(args))

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


def _single(mode: Mode, entry: _Entry, seconds: dict[str, float]) -> Fn:
    """The dispatcher of a hook one plugin registered for: its one result, as the mode answers."""
    fn, plugin = entry.fn, entry.plugin

    def timed(*args: Any) -> Any:
        t0 = perf_counter()
        out = fn(*args)
        seconds[plugin] += perf_counter() - t0
        return out

    if mode is Mode.ORDER:
        return lambda *args: (timed(*args),)
    if mode is Mode.SCORE:
        return lambda *args: 0.0 + timed(*args)
    if mode is Mode.ALL:
        return lambda *args: bool(timed(*args))
    if mode is Mode.EVENT:
        return timed

    def check(*args: Any) -> tuple[str, Any] | None:
        out = timed(*args)
        return None if out is None else (plugin, out)

    return check


def _timed(entries: Sequence[_Entry], seconds: dict[str, float]) -> Callable[[tuple[Any, ...]], Iterator[Any]]:
    """The entries' results in tier order, lazily (a mode may stop at the first that decides), each
    plugin charged the time from the previous reading of the clock to the next."""

    def run(args: tuple[Any, ...]) -> Iterator[Any]:
        t0 = perf_counter()
        for e in entries:
            out = e.fn(*args)
            t1 = perf_counter()
            seconds[e.plugin] += t1 - t0
            t0 = t1
            yield out

    return run


def _add_up(scores: Iterator[float]) -> float:
    """Scores summed in tier order (not ``sum``, whose float rounding differs between Pythons)."""
    total = 0.0
    for score in scores:
        total += score
    return total


def _first_reason(entries: Sequence[_Entry], results: Iterator[Any]) -> tuple[str, Any] | None:
    """CHECK and ANY: the first objection in tier order, with its plugin (the rest are not asked)."""
    for e, out in zip(entries, results, strict=True):
        if out is not None:
            return (e.plugin, out)
    return None


def _drain(results: Iterator[Any]) -> None:
    for _ in results:
        pass
