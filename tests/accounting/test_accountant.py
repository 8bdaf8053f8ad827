"""Accounting maths on an injected clock: resource-hours, HTCondor decay, shares, queue roll-up."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.accounting import Accountant, queue_ancestry
from policies.clock import ManualClock
from policies.shares import RUP_FLOOR, decay_rup

HOUR = 3600.0
T0 = 19_675 * 86_400.0  # a UTC midnight, so minute/hour/day buckets start on it
GIB = 2.0**30


def accountant(clock: ManualClock, half_life: float = HOUR) -> Accountant:
    return Accountant(clock, half_life, {"cpu": 1.0, "nvidia.com/gpu": 10.0})


def test_100_cores_for_two_hours_is_200_core_hours() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("j1", "alice", "research.vision", "east", {"cpu": 100, "memory": 400 * GIB}, at=T0)
    clock.advance(2 * HOUR)
    acct.stop("j1", at=clock.now())
    snap = acct.snapshot()
    alice = snap.tenants["alice"]
    # 100 cores x 7200 s = 720,000 core-seconds = 200 core-hours; 400 GiB x 2 h = 800 GiB-hours.
    assert alice.seconds["cpu"] / HOUR == 200
    assert alice.seconds["memory"] / HOUR / GIB == 800
    assert alice.unit_seconds / HOUR == 200  # weights: 1 unit per core, memory not billed
    for path in ("research.vision", "research", ""):
        assert snap.queues[path].seconds["cpu"] / HOUR == 200
    window = snap.window(T0 - 86_400, T0 + 86_400)[("alice", "research.vision", "east")]
    assert window.seconds["cpu"] / HOUR == 200
    assert alice.rates == {} and alice.last_usage(snap.time) == T0 + 2 * HOUR


def test_rup_decays_by_half_per_half_life_after_the_tenant_stops() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock, half_life=HOUR)
    acct.start("j1", "alice", "research.vision", "east", {"cpu": 100}, at=T0)
    # One half-life at rho = 100 units from the floor 0.5: 0.5 * 0.5 + 0.5 * 100 = 50.25.
    assert acct.usage(T0 + HOUR).tenant_rup["alice"] == pytest.approx(50.25)
    acct.stop("j1", at=T0 + HOUR)
    # Then rho = 0: each further half-life halves it, 50.25 -> 25.125 -> 12.5625.
    assert acct.usage(T0 + 2 * HOUR).tenant_rup["alice"] == pytest.approx(25.125)
    assert acct.usage(T0 + 3 * HOUR).tenant_rup["alice"] == pytest.approx(12.5625)
    # 50.25 / 2**7 = 0.39 would be under the floor: HTCondor never goes below 0.5.
    assert acct.usage(T0 + 8 * HOUR).tenant_rup["alice"] == RUP_FLOOR
    usage = acct.usage(T0 + 2 * HOUR)
    assert usage.queue_rup["research.vision"] == usage.queue_rup["research"] == usage.queue_rup[""]
    assert usage.tenant_factor == {"alice": 1.0}


def test_lazy_update_equals_stepwise_update() -> None:
    """Events of other tenants must not change a tenant's RUP: one jump over dt = many small steps."""
    clock = ManualClock(T0)
    quiet, busy = accountant(clock), accountant(clock)
    for acct in (quiet, busy):
        acct.start("a", "alice", "q", "east", {"cpu": 8}, at=T0)
    for step in range(1, 50):
        busy.start(f"b{step}", "bob", "p", "east", {"cpu": 1}, at=T0 + step * 97.0)
    rup = quiet.usage(T0 + 5000).tenant_rup["alice"]
    assert busy.usage(T0 + 5000).tenant_rup["alice"] == pytest.approx(rup, rel=1e-12)
    assert rup == pytest.approx(decay_rup(RUP_FLOOR, 8.0, 5000.0, HOUR), rel=1e-12)


def test_queue_half_life_override_and_priority_factor() -> None:
    clock = ManualClock(T0)
    acct = Accountant(clock, HOUR, {"cpu": 1.0}, queue_half_life={"research": 2 * HOUR})
    acct.start("j", "alice", "research.vision", "east", {"cpu": 10}, at=T0)
    acct.set_factor("alice", 100.0)
    usage = acct.usage(T0 + 2 * HOUR)
    # Leaf and root use 1 h: two half-lives, beta = 1/4: 0.5/4 + 10 * 3/4 = 7.625.
    assert usage.queue_rup["research.vision"] == pytest.approx(7.625)
    # research uses 2 h: one half-life, beta = 1/2: 0.5/2 + 10/2 = 5.25.
    assert usage.queue_rup["research"] == pytest.approx(5.25)
    assert usage.tenant_factor["alice"] == 100.0
    assert acct.snapshot(T0 + 2 * HOUR).eup("alice") == pytest.approx(762.5)
    with pytest.raises(ValueError):
        acct.set_factor("alice", 0)


def test_queue_half_lives_can_change_after_a_load() -> None:
    clock = ManualClock(T0)
    acct = Accountant(clock, HOUR, {"cpu": 1.0})
    acct.start("j", "alice", "research.vision", "east", {"cpu": 10}, at=T0)
    acct.snapshot(T0 + HOUR)  # every meter moved to T0 + 1 h with the 1 h half-life: 0.5/2 + 10/2 = 5.25
    acct.set_queue_half_lives({"research": 2 * HOUR})
    usage = acct.usage(T0 + 3 * HOUR)
    # research from 5.25 over 2 h at a 2 h half-life: 5.25/2 + 10/2 = 7.625; the leaf keeps 1 h:
    # 5.25/4 + 10 x 3/4 = 8.8125.
    assert usage.queue_rup["research"] == pytest.approx(7.625)
    assert usage.queue_rup["research.vision"] == pytest.approx(8.8125)


def test_allocations_of_tenants_sum_to_the_federation_allocation() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("a1", "alice", "research.vision", "east", {"cpu": 30, "nvidia.com/gpu": 2}, at=T0)
    acct.start("a2", "alice", "research.vision", "west", {"cpu": 10}, at=T0 + 10)
    acct.start("b1", "bob", "research.vision", "east", {"cpu": 25}, at=T0 + 20)
    acct.start("c1", "carol", "scratch.default", "west", {"cpu": 5, "nvidia.com/gpu": 1}, at=T0 + 30)
    acct.stop("a2", at=T0 + 40)
    snap = acct.snapshot(T0 + 100)
    root = snap.queues[""]
    assert sum(m.rates.get("cpu", 0.0) for m in snap.tenants.values()) == root.rates["cpu"] == 60
    # Units: cpu x 1 + gpu x 10: alice 30 + 20, bob 25, carol 5 + 10.
    assert {t: m.units for t, m in snap.tenants.items()} == {"alice": 50, "bob": 25, "carol": 15}
    assert root.units == 90
    assert sum(m.unit_seconds for m in snap.tenants.values()) == pytest.approx(root.unit_seconds)
    assert snap.series[("alice", "research.vision", "west")].seconds["cpu"] == 10 * 30  # ran 30 s


def test_start_is_idempotent_and_stop_of_unknown_jobs_is_ignored() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("j", "alice", "q", "east", {"cpu": 4}, at=T0)
    acct.start("j", "alice", "q", "east", {"cpu": 4}, at=T0 + 5)
    acct.stop("nope", at=T0 + 6)
    assert acct.running() == {"j"}
    assert acct.snapshot(T0 + 10).tenants["alice"].rates == {"cpu": 4}
    acct.stop("j", at=T0 + 10)
    acct.stop("j", at=T0 + 20)
    assert acct.snapshot(T0 + 30).tenants["alice"].seconds == {"cpu": 40}


def test_an_event_that_arrives_late_is_backdated_to_its_time() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("a", "alice", "q", "east", {"cpu": 1}, at=T0)
    acct.start("b", "bob", "q", "east", {"cpu": 2}, at=T0 + 100)
    acct.snapshot(T0 + 150)  # a save moves every meter to T0 + 150
    acct.stop("b", at=T0 + 120)  # the end comes after the save: 20 s were counted too many, and are taken back
    acct.start("c", "bob", "p", "west", {"cpu": 4}, at=T0 + 130)  # a start after it: 20 s too few, added
    snap = acct.snapshot(T0 + 200)
    assert snap.tenants["alice"].seconds == {"cpu": 200}
    assert snap.tenants["bob"].seconds == {"cpu": 2 * 20 + 4 * 70}
    assert snap.queues["q"].seconds == {"cpu": 200 + 2 * 20} and snap.queues[""].seconds == {"cpu": 520}
    series = snap.window(T0, T0 + 60 * 4)
    assert series[("bob", "q", "east")].seconds == {"cpu": 40}
    assert series[("bob", "p", "west")].seconds == {"cpu": 280}
    # bob's real priority: 2 units over [100, 120) then 4 units over [130, 200), as if in order.
    in_order = decay_rup(decay_rup(decay_rup(RUP_FLOOR, 2.0, 20.0, HOUR), 0.0, 10.0, HOUR), 4.0, 70.0, HOUR)
    assert acct.usage(T0 + 200).tenant_rup["bob"] == pytest.approx(in_order, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["alice", "bob"]),
            st.sampled_from(["a", "a.x", "b"]),
            st.sampled_from(["east", "west"]),
            st.integers(1, 8),
            st.integers(0, 7_200),  # start, seconds after T0
            st.integers(1, 3_600),  # run time
        ),
        min_size=1,
        max_size=10,
    ),
    st.randoms(use_true_random=False),
    st.integers(0, 600),
)
def test_late_events_give_the_usage_of_events_in_order(
    runs: list[tuple[str, str, str, int, int, int]], rnd: random.Random, delay: int
) -> None:
    """Each start and end arrives up to ``delay`` late (a job's end after its start, as the watch
    delivers them), with saves between: resource-seconds, unit-seconds and every history bucket come
    out as if every event had arrived on time."""
    events: list[tuple[float, float, int, bool]] = []  # (arrival, time, run, is start)
    for n, (_, _, _, _, start, run) in enumerate(runs):
        started = T0 + start + rnd.uniform(0, delay)
        events.append((started, T0 + start, n, True))
        events.append((max(started, T0 + start + run + rnd.uniform(0, delay)), T0 + start + run, n, False))
    on_time, late = accountant(ManualClock(T0)), accountant(ManualClock(T0))
    for acct, order in ((on_time, sorted(events, key=lambda e: (e[1], e[3]))), (late, sorted(events))):
        for arrival, at, n, starting in order:
            tenant, queue, cluster, cpu, _, _ = runs[n]
            if starting:
                acct.start(f"j{n}", tenant, queue, cluster, {"cpu": cpu}, at=at)
            else:
                acct.stop(f"j{n}", at=at)
            if acct is late and rnd.random() < 0.3:
                acct.snapshot(arrival)  # a save between events moves every meter to the arrival time
    end = T0 + 20_000
    want, got = on_time.snapshot(end), late.snapshot(end)
    assert got.tenants.keys() == want.tenants.keys() and got.queues.keys() == want.queues.keys()
    for name, meter in want.tenants.items():
        assert got.tenants[name].seconds == pytest.approx(meter.seconds, abs=1e-6)
        assert got.tenants[name].unit_seconds == pytest.approx(meter.unit_seconds, abs=1e-6)
    for path, meter in want.queues.items():
        assert got.queues[path].seconds == pytest.approx(meter.seconds, abs=1e-6)
    edges = [T0 + 60.0 * k for k in range(20_000 // 60 + 2)]
    got_bins = got.binned(edges)
    assert got_bins.keys() == want.binned(edges).keys()
    for key, bins in want.binned(edges).items():
        assert [b.unit_seconds for b in got_bins[key]] == pytest.approx([b.unit_seconds for b in bins], abs=1e-6)
    for history in late._history.values():
        for cells in history.buckets:
            assert list(cells) == sorted(cells)


def test_queue_ancestry() -> None:
    assert queue_ancestry("a.b.c") == ["a.b.c", "a.b", "a", ""]
    assert queue_ancestry("a") == ["a", ""]


@given(
    st.lists(
        st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from(["a", "a.x", "b"]), st.integers(1, 8)),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from(["alice", "bob", "carol", "dave", "a", "a.x", "b", "", "c"]), max_size=12),
)
def test_real_priorities_read_when_asked_are_those_of_every_meter_now(
    runs: list[tuple[str, str, int]], reads: list[str]
) -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    for n, (tenant, queue, cpu) in enumerate(runs):
        acct.start(f"j{n}", tenant, queue, "east", {"cpu": cpu}, at=T0 + 600 * n)
        if n % 3 == 2:
            acct.stop(f"j{n - 1}", at=T0 + 600 * n + 300)
        at = T0 + 600 * n + 450
        usage = acct.usage(at)
        for name in reads:  # some names twice, some unknown
            for rups, meters in ((usage.tenant_rup, acct._tenants), (usage.queue_rup, acct._queues)):
                expected = meters[name].rup_at(at) if name in meters else None
                assert rups.get(name) == expected
        assert dict(usage.tenant_rup) == {t: m.rup_at(at) for t, m in acct._tenants.items()}
