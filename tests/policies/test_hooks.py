"""The hook dispatcher: every mode answers as the plain tier walk would, asking no more plugins than it needs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from policies.framework.hooks import ABSTAIN, HOOKS, PERMIT, REJECT, Hooks, Mode

RESULTS: dict[Mode, st.SearchStrategy[Any]] = {
    Mode.ORDER: st.integers(-3, 3),
    Mode.CHECK: st.none() | st.sampled_from(["no room", "cordoned"]),
    Mode.ANY: st.none() | st.just("overused"),
    Mode.ALL: st.booleans(),
    Mode.SCORE: st.floats(-100, 100, allow_nan=False),
    Mode.EVENT: st.none(),
    Mode.VOTE: st.sampled_from([PERMIT, ABSTAIN, REJECT]),
}


def walk(mode: Mode, results: list[tuple[str, int, Any]]) -> tuple[Any, int]:
    """The answer of the plain tier walk over (plugin, tier, result), and how many plugins it asks."""
    if mode is Mode.ORDER:
        return tuple(r for _, _, r in results), len(results)
    if mode is Mode.SCORE:
        score = 0.0
        for _, _, r in results:
            score += r
        return score, len(results)
    if mode is Mode.EVENT:
        return None, len(results)
    if mode is Mode.VOTE:
        tier, permitted = None, False
        for asked, (_, t, r) in enumerate(results):
            if t != tier:
                if permitted:
                    return True, asked
                tier = t
            if r == REJECT:
                return False, asked + 1
            permitted = permitted or r == PERMIT
        return (True if permitted else None), len(results)
    for asked, (plugin, _, r) in enumerate(results, start=1):
        if mode is Mode.ALL and not r:
            return False, asked
        if mode is not Mode.ALL and r is not None:
            return (plugin, r), asked
    return (True if mode is Mode.ALL else None), len(results)


@st.composite
def registrations(draw: st.DrawFn) -> tuple[str, list[tuple[str, int, Any]]]:
    hook = draw(st.sampled_from([h for h, mode in HOOKS.items() if mode in RESULTS]))
    count = draw(st.integers(0, 4))
    tiers = sorted(draw(st.lists(st.integers(0, 2), min_size=count, max_size=count)))
    return hook, [(f"p{i}", tiers[i], draw(RESULTS[HOOKS[hook]])) for i in range(count)]


@given(registrations(), st.booleans())
def test_every_mode_answers_as_the_tier_walk_and_asks_no_more_plugins(case: tuple[str, list[Any]], timed: bool) -> None:
    """Timed or not, a dispatcher answers the same; only a timed one charges the plugins it asked."""
    hook, results = case
    hooks = Hooks(timed)
    asked: list[str] = []
    for plugin, tier, result in results:
        hooks.add(hook, plugin, tier, lambda *_, p=plugin, r=result: asked.append(p) or r)
    expected, count = walk(HOOKS[hook], results)
    assert hooks.call(hook, "arg") == expected
    assert asked == [plugin for plugin, _, _ in results[:count]]
    assert set(hooks.seconds) == {plugin for plugin, _, _ in results}
    assert all((hooks.seconds[p] > 0) == (timed and p in asked) for p in hooks.seconds)
