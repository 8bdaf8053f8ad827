"""Plugin sets kept from one session to the next: reused only for equal tiers, never by two open sessions,
and a reused set decides exactly as a new one."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from policy_builders import conf, job, node, run
from test_properties import LOCAL_TIERS, SETTINGS, worlds

from policies import Decisions, ManualClock, Snapshot, close_session, open_session
from policies.framework import hooks, tiers

GLOBAL_TIERS = (
    ["priority", "gang", "conformance"],
    [
        {"name": "fairshare", "arguments": {"weights": {"cpu": 1, "memory": 0.5}}},
        "predicates",
        {"name": "proportion", "enableQueueOrder": False, "enableAllocatable": False},
        {"name": "reservation", "arguments": {"after": 0}},
        {"name": "binpack", "arguments": {"binpack.weight": 10}},
    ],
)


@pytest.fixture(autouse=True)
def no_kept_sets() -> None:
    tiers._idle.clear()


def _outcome(d: Decisions) -> tuple[Any, ...]:
    """Everything a session decided; its timings aside."""
    return d.binds, d.evictions, d.pipelined, d.reservations, d.reasons, d.queue_reasons


def test_a_closed_session_leaves_its_plugins_to_the_next_one_of_equal_tiers() -> None:
    first = conf("allocate", ["priority", "gang"], ["predicates"])
    ssn = open_session(first, Snapshot([]), ManualClock(0))
    plugins = ssn.plugins
    close_session(ssn)
    again = open_session(conf("allocate", ["priority", "gang"], ["predicates"]), Snapshot([]), ManualClock(0))
    assert again.plugins is plugins
    other = open_session(conf("allocate", ["priority", "gang"]), Snapshot([]), ManualClock(0))
    assert other.plugins is not plugins


def test_a_conf_changed_in_place_gets_plugins_built_from_its_new_tiers() -> None:
    c = conf("allocate", ["priority", "gang"])
    close_session(open_session(c, Snapshot([]), ManualClock(0)))
    gang = c.tiers[0][1]
    gang.disabled_hooks = frozenset({"job_order"})
    ssn = open_session(c, Snapshot([]), ManualClock(0))
    assert [e.plugin for e in ssn.hooks._table["job_order"]] == ["priority"]
    close_session(ssn)
    gang.arguments["preemptMode"] = "whole"
    ssn = open_session(c, Snapshot([]), ManualClock(0))
    assert [p.mode for p in ssn.plugins if p.name == "gang"] == ["whole"]  # type: ignore[attr-defined]
    close_session(ssn)
    gang.arguments["preemptMode"] = "sideways"
    with pytest.raises(ValueError, match="preemptMode"):
        open_session(c, Snapshot([]), ManualClock(0))


def test_sessions_open_at_the_same_time_never_share_plugins() -> None:
    c = conf("allocate", ["priority", "gang"], ["predicates"])
    run(c, Snapshot([]))  # leaves a set to take
    one = open_session(c, Snapshot([node("n0")], [job("a")]), ManualClock(0))
    two = open_session(c, Snapshot([node("n0")], [job("b")]), ManualClock(0))
    assert not set(map(id, one.plugins)) & set(map(id, two.plugins))
    one.run()
    assert [b.job for b in close_session(one).binds] == ["a"]
    two.run()
    assert [b.job for b in close_session(two).binds] == ["b"]


def busy_world() -> Snapshot:
    return Snapshot([node(f"n{i}") for i in range(50)], [job(f"j{i}") for i in range(50)])


def test_plugin_seconds_are_each_sessions_own(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = iter(range(1_000_000))
    monkeypatch.setattr(hooks, "perf_counter", lambda: float(next(reads)))  # a hook call takes 1 s per plugin
    c = conf("allocate", ["gang"], ["predicates"])
    c.hook_timing = True
    busy = run(c, busy_world())
    idle = run(c, Snapshot([]))
    assert busy.plugin_seconds["predicates"] >= 50
    assert set(idle.plugin_seconds) == {"gang", "predicates"} and idle.plugin_seconds["predicates"] < 1


def test_hook_calls_are_timed_only_when_the_conf_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``hookTiming`` plugins are charged for session open and close only (a real, short
    time); a conf that asks gets a set of its own, never the kept untimed one."""
    reads = iter(range(1_000_000))
    monkeypatch.setattr(hooks, "perf_counter", lambda: float(next(reads)))
    c = conf("allocate", ["gang"], ["predicates"])
    quiet = run(c, busy_world())
    c.hook_timing = True
    loud = run(c, busy_world())
    assert quiet.plugin_seconds["predicates"] < 1 and loud.plugin_seconds["predicates"] >= 50
    assert [b.job for b in quiet.binds] == [b.job for b in loud.binds]


@pytest.mark.parametrize("tiers_", [LOCAL_TIERS, GLOBAL_TIERS])
def test_a_kept_set_holds_nothing_of_its_closed_session(tiers_: Any) -> None:
    c = conf("enqueue, allocate, preempt, reclaim, backfill", *tiers_)
    ssn = open_session(c, Snapshot([node("n0", cpu=4)], [job("a", tasks=2)]), ManualClock(0))
    ssn.run()
    close_session(ssn)
    plugins, session = ssn.plugins, weakref.ref(ssn)
    del ssn
    gc.collect()
    assert session() is None
    assert [vars(p) for p in plugins] == [vars(p) for p in tiers.PluginSet(c.tiers).plugins]


@SETTINGS
@given(worlds(), worlds(), st.sampled_from([LOCAL_TIERS, GLOBAL_TIERS]))
def test_a_kept_plugin_set_decides_as_a_new_one(before: Snapshot, world: Snapshot, tiers_: Any) -> None:
    c = conf("enqueue, allocate, preempt, reclaim, backfill", *tiers_)
    run(c, before)
    kept = run(c, world)
    tiers._idle.clear()
    assert _outcome(kept) == _outcome(run(c, world))
