"""Accounting maths on an injected clock: resource-hours, HTCondor decay, shares, queue roll-up."""

from __future__ import annotations

import pytest
from hypothesis import given
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


def test_events_dated_in_the_past_apply_at_the_latest_time_seen() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("a", "alice", "q", "east", {"cpu": 1}, at=T0 + 100)
    acct.start("b", "bob", "q", "east", {"cpu": 1}, at=T0 + 50)  # late report: counted from T0 + 100
    snap = acct.snapshot(T0 + 200)
    assert snap.tenants["bob"].seconds == snap.tenants["alice"].seconds == {"cpu": 100}


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
