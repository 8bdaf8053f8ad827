"""One dispatcher per hook mode, instead of one tier loop per hook.

Each hook kind has a mode that says how the tiers' plugins combine:

- ORDER: plugins give sort keys; the combined key is their tuple (first plugin that differs decides).
- CHECK: plugins return None (no objection) or a reason; the first reason wins, in tier order.
- ALL:   plugins return bools; all must agree (no plugin = True).
- ANY:   plugins return reasons or None; any reason means yes (``overused``, ``tenant_held_back``).
- VOTE:  plugins return +1 / 0 / -1; within a tier any -1 rejects, any +1 permits; else next tier.
- SCORE: plugins return numbers, summed.
- VICTIMS: plugins return the candidates they allow; every tier votes, so a victim must be allowed
  by all of them (evicting is the one decision where any plugin's objection must hold).
- EVENT: every handler is called.

Plugins are charged for their session open and close, as Volcano's plugin latency is. With the
conf's ``hookTiming`` every hook call is timed against its plugin as well: a profile of where a
session's time goes, which costs two clock reads per plugin and call, so it is off unless asked
for. A table is built once for a conf's plugins and serves their later sessions too
(``PluginSet``), so each hook gets a dispatcher made for its mode and plugins once, not a walk
that looks up its mode on every call.
"""

from __future__ import annotations

from collections.abc import Callable
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
    "queue_share": Mode.ORDER,  # the share a plugin's queue_order is the tree of (see ``tree_share``)
    "tenant_order": Mode.ORDER,
    "predicate": Mode.CHECK,
    "job_valid": Mode.CHECK,
    "job_enqueueable": Mode.CHECK,
    "job_reservable": Mode.CHECK,
    "allocatable": Mode.CHECK,
    "overused": Mode.ANY,
    "tenant_held_back": Mode.ANY,
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
            for hook, mode in HOOKS.items():
                entries = [
                    (e.plugin, _charged(e.plugin, e.fn, self.seconds) if self.timed else e.fn, e.tier)
                    for e in self._table[hook]
                ]
                self._dispatch[hook] = _BUILDERS[mode](entries)
        return self._dispatch

    def tree_share(self) -> Fn | None:
        """The queue order as one share per queue, when a single plugin orders queues and gives the
        share its ``queue_order`` is the tree of (``Session.tree_key``): queues can then be served
        level by level (``policies.framework.queue_heaps``). None for any other queue order."""
        order = self._table["queue_order"]
        if len(order) != 1:
            return None
        for e in self._table["queue_share"]:
            if e.plugin == order[0].plugin:
                return _charged(e.plugin, e.fn, self.seconds) if self.timed else e.fn
        return None

    def call(self, hook: str, *args: Any) -> Any:
        """Run ``hook`` over the tiers according to its mode."""
        return self.dispatchers()[hook](*args)


# Each builder returns the dispatcher of one hook over its (plugin, fn, tier) entries, in tier order; a
# dispatcher that has its answer stops asking. Timing wraps each plugin's function (``_charged``), so
# the dispatchers are the same whether or not the hooks are timed.

Entries = list[tuple[str, Fn, int]]


def _charged(plugin: str, fn: Fn, seconds: dict[str, float]) -> Fn:
    def timed(*args: Any) -> Any:
        t0 = perf_counter()
        try:
            return fn(*args)
        finally:
            seconds[plugin] += perf_counter() - t0

    return timed


def _order(entries: Entries) -> Fn:
    """Ordering keys are asked on every pop and push of the job, tenant and queue heaps, and a hook
    is mostly served by one or two plugins: those get their tuple built directly, without a loop."""
    fns = [fn for _, fn, _ in entries]
    if len(fns) == 1:
        (only,) = fns
        return lambda *args: (only(*args),)
    if len(fns) == 2:
        first, second = fns
        return lambda *args: (first(*args), second(*args))

    def order(*args: Any) -> tuple[Any, ...]:
        return tuple([fn(*args) for fn in fns])

    return order


def _score(entries: Entries) -> Fn:
    fns = [fn for _, fn, _ in entries]

    def score(*args: Any) -> float:
        total = 0.0
        for fn in fns:
            total += fn(*args)
        return total

    return score


def _first_reason(entries: Entries) -> Fn:
    """CHECK and ANY: the first plugin with something to say answers, with its name."""
    named = [(plugin, fn) for plugin, fn, _ in entries]

    def first_reason(*args: Any) -> tuple[str, Any] | None:
        for plugin, fn in named:
            out = fn(*args)
            if out is not None:
                return (plugin, out)
        return None

    return first_reason


def _all(entries: Entries) -> Fn:
    fns = [fn for _, fn, _ in entries]

    def all_(*args: Any) -> bool:
        for fn in fns:
            if not fn(*args):
                return False
        return True

    return all_


def _event(entries: Entries) -> Fn:
    fns = [fn for _, fn, _ in entries]

    def event(*args: Any) -> None:
        for fn in fns:
            fn(*args)

    return event


def _vote(entries: Entries) -> Fn:
    """Within a tier any REJECT rejects and any PERMIT permits; a tier with no opinion passes on."""
    tiers: list[list[Fn]] = []
    last_tier = None
    for _, fn, tier in entries:
        if tier != last_tier:
            tiers.append([])
            last_tier = tier
        tiers[-1].append(fn)

    def vote(*args: Any) -> bool | None:
        for fns in tiers:
            permitted = False
            for fn in fns:
                said = fn(*args)
                if said == REJECT:
                    return False
                permitted = permitted or said == PERMIT
            if permitted:
                return True
        return None

    return vote


def _victims(entries: Entries) -> Fn:
    """Every plugin narrows the candidates: a victim must be allowed by all of them."""
    fns = [fn for _, fn, _ in entries]

    def victims(*args: Any) -> list[Any] | None:
        chosen: list[Any] | None = None
        for fn in fns:
            allowed = fn(*args)
            if chosen is None:
                chosen = list(allowed)
            else:
                keep = {id(v) for v in allowed}
                chosen = [v for v in chosen if id(v) in keep]
        return chosen

    return victims


_BUILDERS: dict[Mode, Callable[[Entries], Fn]] = {
    Mode.ORDER: _order,
    Mode.SCORE: _score,
    Mode.CHECK: _first_reason,
    Mode.ANY: _first_reason,
    Mode.ALL: _all,
    Mode.VOTE: _vote,
    Mode.VICTIMS: _victims,
    Mode.EVENT: _event,
}
