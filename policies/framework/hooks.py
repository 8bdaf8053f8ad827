"""One dispatcher per hook mode, instead of one tier loop per hook.

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

Plugins are charged for their session open and close, as Volcano's plugin latency is. With the
conf's ``hookTiming`` every hook call is timed against its plugin as well: a profile of where a
session's time goes, which costs two clock reads per plugin and call (about a tenth of a trace
replay), so it is off unless asked for. A table is built once for a conf's plugins and serves their
later sessions too (``PluginSet``), so each hook gets a dispatcher made for its mode and plugins
once, not a walk that looks up its mode on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
    """The hook tables of one conf's plugins, a dispatcher per hook, and seconds per plugin (of hook
    calls too when ``timed``)."""

    def __init__(self, timed: bool = False) -> None:
        self._table: dict[str, list[_Entry]] = {name: [] for name in HOOKS}
        self._dispatch: dict[str, Fn] = {}
        self.seconds: dict[str, float] = {}
        self.timed = timed

    def add(self, hook: str, plugin: str, tier: int, fn: Fn) -> None:
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}")
        self._table[hook].append(_Entry(plugin, fn, tier))
        self._dispatch.clear()
        self.seconds.setdefault(plugin, 0.0)

    def has(self, hook: str) -> bool:
        return bool(self._table[hook])

    def charge(self, plugin: str, seconds: float) -> None:
        self.seconds[plugin] = self.seconds.get(plugin, 0.0) + seconds

    def reset_seconds(self) -> None:
        """A new session: every plugin's time starts again from zero (in place: dispatchers hold it)."""
        for plugin in self.seconds:
            self.seconds[plugin] = 0.0

    def dispatchers(self) -> dict[str, Fn]:
        """Each hook's dispatcher: called with the hook's arguments, it runs the tiers by the hook's mode."""
        if not self._dispatch:
            walk = _timed(self.seconds) if self.timed else _untimed
            for hook, mode in HOOKS.items():
                entries = [(e.plugin, e.fn, e.tier) for e in self._table[hook]]
                self._dispatch[hook] = _BUILDERS[mode](entries, walk)
        return self._dispatch

    def call(self, hook: str, *args: Any) -> Any:
        """Run ``hook`` over the tiers according to its mode."""
        return self.dispatchers()[hook](*args)


# Each builder returns the dispatcher of one hook over its (plugin, fn, tier) entries, in tier order, and
# runs the plugins through a walk: each plugin's answer with its name, one at a time, so a dispatcher
# that has its answer stops asking. The timed walk reads the clock once before the first plugin and
# once after each, and charges each plugin the time since the previous reading (n + 1 readings for n).

Entries = list[tuple[str, Fn, int]]
Walk = Callable[[Entries, tuple[Any, ...]], Iterator[tuple[str, Any]]]


def _untimed(entries: Entries, args: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
    for plugin, fn, _ in entries:
        yield plugin, fn(*args)


def _timed(seconds: dict[str, float]) -> Walk:
    def walk(entries: Entries, args: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
        t0 = perf_counter()
        for plugin, fn, _ in entries:
            out = fn(*args)
            t1 = perf_counter()
            seconds[plugin] += t1 - t0
            t0 = t1
            yield plugin, out

    return walk


def _order(entries: Entries, walk: Walk) -> Fn:
    def order(*args: Any) -> tuple[Any, ...]:
        return tuple(key for _, key in walk(entries, args))

    return order


def _score(entries: Entries, walk: Walk) -> Fn:
    def score(*args: Any) -> float:
        total = 0.0
        for _, points in walk(entries, args):
            total += points
        return total

    return score


def _first_reason(entries: Entries, walk: Walk) -> Fn:
    """CHECK and ANY: the first plugin with something to say answers, with its name."""

    def first_reason(*args: Any) -> tuple[str, Any] | None:
        for plugin, out in walk(entries, args):
            if out is not None:
                return (plugin, out)
        return None

    return first_reason


def _all(entries: Entries, walk: Walk) -> Fn:
    def all_(*args: Any) -> bool:
        return all(out for _, out in walk(entries, args))

    return all_


def _event(entries: Entries, walk: Walk) -> Fn:
    def event(*args: Any) -> None:
        for _ in walk(entries, args):
            pass

    return event


def _vote(entries: Entries, walk: Walk) -> Fn:
    """Within a tier any REJECT rejects and any PERMIT permits; a tier with no opinion passes on."""
    tiers: list[Entries] = []
    for entry in entries:
        if not tiers or tiers[-1][0][2] != entry[2]:
            tiers.append([])
        tiers[-1].append(entry)

    def vote(*args: Any) -> bool | None:
        for tier in tiers:
            permitted = False
            for _, said in walk(tier, args):
                if said == REJECT:
                    return False
                permitted = permitted or said == PERMIT
            if permitted:
                return True
        return None

    return vote


def _victims(entries: Entries, walk: Walk) -> Fn:
    """Every plugin narrows the candidates: a victim must be allowed by all of them."""

    def victims(*args: Any) -> list[Any] | None:
        chosen: list[Any] | None = None
        for _, allowed in walk(entries, args):
            if chosen is None:
                chosen = list(allowed)
            else:
                keep = {id(v) for v in allowed}
                chosen = [v for v in chosen if id(v) in keep]
        return chosen

    return victims


_BUILDERS: dict[Mode, Callable[[Entries, Walk], Fn]] = {
    Mode.ORDER: _order,
    Mode.SCORE: _score,
    Mode.CHECK: _first_reason,
    Mode.ANY: _first_reason,
    Mode.ALL: _all,
    Mode.VOTE: _vote,
    Mode.VICTIMS: _victims,
    Mode.EVENT: _event,
}
