"""build_quota_report and build_userprio on the hand-checkable scenario (see scenario.py)."""

from __future__ import annotations

import pytest

from federation.accounting import Accountant
from federation.models import JobState
from federation.reports.facts import JobsRead
from federation.reports.models import QuotaReport, TenantRow
from federation.reports.quota import UnknownQueue, build_quota_report, known_tenants
from federation.reports.targets import borrowed_and_lent, fair_share_targets
from federation.reports.userprio import build_userprio
from policies.clock import ManualClock
from tests.reports.scenario import CAPACITY, HOUR, NOW, T0, accountant, facts, job, tree


def report(**kwargs: object) -> QuotaReport:
    snap = accountant(ManualClock(T0)).snapshot(NOW)
    return build_quota_report(snap, tree(), facts(), CAPACITY, since=T0, until=NOW, **kwargs)  # type: ignore[arg-type]


def rows(rep: QuotaReport) -> dict[str, TenantRow]:
    return {row.tenant: row for row in rep.tenants}


def test_usage_shares_and_counts() -> None:
    rep = report()
    by = rows(rep)
    assert list(by) == ["alice", "bob", "carol", "dave"]
    # Core-hours in the window: alice 50 x 2, bob 10 x 1, carol 20 x 1, dave 20 x 2 = 170 in all.
    assert {t: r.resource_hours.get("cpu", 0.0) for t, r in by.items()} == {
        "alice": 100,
        "bob": 10,
        "carol": 20,
        "dave": 40,
    }
    assert by["alice"].share_window == pytest.approx(100 / 170)
    # Now: alice 50, bob 10, dave 20 of 80 allocated; the shares of the allocation sum to one.
    assert {t: r.share_now for t, r in by.items()} == {"alice": 0.625, "bob": 0.125, "carol": 0.0, "dave": 0.25}
    assert sum(r.allocated.get("cpu", 0.0) for r in by.values()) == rep.allocated_units == 80
    assert sum(r.share_window for r in by.values()) == pytest.approx(1.0)
    alice = by["alice"]
    assert (alice.running, alice.pending, alice.completed, alice.failed) == (1, 0, 1, 1)
    # alice's waits: a1 600 s, a2 60 s, a3 300 s; nearest rank: p50 = 2nd of 3 = 300, p95 = 3rd = 600.
    assert (alice.wait_p50, alice.wait_p95) == (300, 600)
    assert (by["bob"].running, by["bob"].pending) == (1, 1)
    assert by["carol"].last_usage == T0 + HOUR and alice.last_usage == NOW


def test_guarantees_caps_borrowed_and_lent() -> None:
    by = rows(report())
    # vision's 40-core guarantee is split between its two tenants; nlp's 20 is carol's alone.
    assert {t: r.guarantee for t, r in by.items()} == {
        "alice": {"cpu": 20},
        "bob": {"cpu": 20},
        "carol": {"cpu": 20},
        "dave": {},
    }
    assert by["alice"].cap == {"cpu": 80} and by["dave"].cap == {}  # min(vision 80, research 90)
    # Borrowed: alice 50 - 20 = 30, dave 20 - 0 = 20 (50 in all). Lent: bob's idle 10 and carol's
    # idle 20, both fully used by the borrowers.
    assert {t: r.borrowed for t, r in by.items()} == {"alice": {"cpu": 30}, "bob": {}, "carol": {}, "dave": {"cpu": 20}}
    assert {t: r.lent for t, r in by.items()} == {"alice": {}, "bob": {"cpu": 10}, "carol": {"cpu": 20}, "dave": {}}


def test_fair_share_is_each_tenants_entitlement_not_todays_demand() -> None:
    by = rows(report())
    # carol's job ended an hour ago and she has nothing pending: under the old rule (demand-capped
    # targets) her fair share was 0; as an entitlement it is her slice if everyone wanted everything.
    assert sum(r.fair_share for r in by.values()) == pytest.approx(1.0)
    assert all(r.fair_share > 0 for r in by.values()), {t: r.fair_share for t, r in by.items()}
    # alice and bob share vision; alice's 50 cores for 2 h weigh more than bob's 10 for 1 h.
    assert by["alice"].fair_share < by["bob"].fair_share
    assert sum(r.fair_share_units for r in by.values()) == pytest.approx(100)  # the whole capacity


def test_pie_spin_within_a_leaf_goes_by_one_over_eup() -> None:
    acct = Accountant(ManualClock(T0), HOUR, {"cpu": 1.0})
    snap = acct.snapshot()  # nobody has run yet: every RUP is the floor 0.5
    demand = {("research.vision", "alice"): 30.0, ("research.vision", "bob"): 30.0}
    _, even = fair_share_targets(tree(), snap, 30.0, demand)
    assert even == pytest.approx({("research.vision", "alice"): 15, ("research.vision", "bob"): 15})
    acct.set_factor("bob", 2.0)  # EUP alice 0.5, bob 1.0: slices 2 : 1 of 30 cores
    _, tilted = fair_share_targets(tree(), acct.snapshot(), 30.0, demand)
    assert tilted == pytest.approx({("research.vision", "alice"): 20, ("research.vision", "bob"): 10})


def test_borrowed_and_lent_only_counts_lending_that_someone_uses() -> None:
    borrowed, lent = borrowed_and_lent(
        {"a": {"cpu": 2}, "b": {"cpu": 9}, "c": {"cpu": 0}}, {"a": {"cpu": 10}, "b": {"cpu": 4}, "c": {"cpu": 6}}
    )
    assert borrowed == {"a": {}, "b": {"cpu": 5}, "c": {}}
    # a has 8 idle, c 6 idle, but only 5 are borrowed: each lends at most what the others borrow.
    assert lent == {"a": {"cpu": 5}, "b": {}, "c": {"cpu": 5}}


def test_queue_filter_keeps_federation_wide_shares() -> None:
    rep = report(queue="research")
    assert [r.tenant for r in rep.tenants] == ["alice", "bob", "carol"]
    assert rows(rep)["alice"].share_now == 0.625
    assert [q.queue for q in rep.queues] == ["research", "research.nlp", "research.vision"]
    assert [r.tenant for r in report(queue="root.scratch").tenants] == ["dave"]
    with pytest.raises(UnknownQueue):
        report(queue="nope")


def test_queue_rows() -> None:
    queues = {q.queue: q for q in report().queues}
    assert queues["research"].allocated == {"cpu": 60} and queues["research"].borrowed == {}
    assert queues["scratch"].borrowed == {"cpu": 20}
    # Siblings vision and nlp: vision uses 60 of a 40 guarantee; nlp lends its idle 20 to it.
    assert queues["research.vision"].borrowed == {"cpu": 20}
    assert queues["research.nlp"].lent == {"cpu": 20}
    assert (queues["research.vision"].running, queues["research.vision"].pending) == (2, 1)
    assert queues["research"].resource_hours == {"cpu": 130}


def test_tenant_filter_keeps_one_row_and_no_queue_rows() -> None:
    rep = report(tenant="bob", by_cluster=True)
    assert [r.tenant for r in rep.tenants] == ["bob"]
    assert rep.queues == []
    (west,) = rep.tenants[0].clusters
    assert (west.cluster, west.allocated, west.resource_hours, west.running) == ("west", {"cpu": 10}, {"cpu": 10}, 1)


def test_by_cluster_splits_a_tenant() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock)
    acct.start("a9", "alice", "research.vision", "west", {"cpu": 5}, at=T0 + HOUR)
    snap = acct.snapshot(NOW)
    rep = build_quota_report(snap, tree(), facts(), CAPACITY, since=T0, until=NOW, by_cluster=True)
    clusters = {c.cluster: c for c in rows(rep)["alice"].clusters}
    assert clusters["east"].resource_hours == {"cpu": 100} and clusters["west"].resource_hours == {"cpu": 5}
    assert (clusters["east"].running, clusters["east"].completed, clusters["east"].failed) == (1, 1, 1)
    assert rows(rep)["alice"].resource_hours == {"cpu": 105}


def test_series_bins_match_the_runs() -> None:
    series = report(bins=2).series
    assert series is not None
    # First hour: alice 50 + carol 20 + dave 20 = 90 cores; second: alice 50 + bob 10 + dave 20 = 80.
    assert series.edges == [T0, T0 + HOUR, NOW]
    assert series.tenants["alice"] == [50 * HOUR, 50 * HOUR]
    assert series.tenants["bob"] == [0, 10 * HOUR]
    assert series.total == [90 * HOUR, 80 * HOUR]


def test_window_before_any_usage_and_bad_window() -> None:
    snap = accountant(ManualClock(T0)).snapshot(NOW)
    early = build_quota_report(snap, tree(), JobsRead(), CAPACITY, since=T0 - 10 * HOUR, until=T0)
    assert all(r.resource_hours == {} and r.share_window == 0 for r in early.tenants)
    with pytest.raises(ValueError, match="before it starts"):
        build_quota_report(snap, tree(), JobsRead(), CAPACITY, since=NOW, until=T0)


def test_known_tenants_and_a_tenant_with_nothing_yet() -> None:
    snap = accountant(ManualClock(T0)).snapshot(NOW)
    extra = [job("e1", "erin", "scratch.default", JobState.PENDING, T0)]
    assert known_tenants(tree(), snap, JobsRead.of(extra)) == {"alice", "bob", "carol", "dave", "erin"}
    rep = build_quota_report(snap, tree(), JobsRead(), CAPACITY, since=T0, until=NOW, tenant="zed")
    assert [r.tenant for r in rep.tenants] == ["zed"] and rep.tenants[0].allocated == {}


def test_userprio_sorted_by_effective_priority() -> None:
    clock = ManualClock(T0)
    acct = accountant(clock, half_life=HOUR)
    acct.set_factor("dave", 10.0)
    prio = build_userprio(acct.snapshot(NOW), HOUR)
    # After 2 h at half-life 1 h from 0.5: alice 0.5/4 + 50 x 3/4 = 37.625; dave's RUP is 15.125
    # (20 cores) but factor 10 makes his EUP 151.25; carol ran 20 cores for 1 h then stopped:
    # (0.5/2 + 20/2) / 2 = 5.125; bob ran 10 cores for the last hour: 0.5/2 + 10/2 = 5.25.
    assert [r.tenant for r in prio.rows] == ["carol", "bob", "alice", "dave"]
    assert [r.effective_priority for r in prio.rows] == pytest.approx([5.125, 5.25, 37.625, 151.25])
    dave = prio.rows[-1]
    assert (dave.real_priority, dave.priority_factor) == pytest.approx((15.125, 10.0))
    assert (dave.in_use, dave.accumulated_unit_hours, dave.last_usage) == ({"cpu": 20}, 40, NOW)
    assert [r.tenant for r in build_userprio(acct.snapshot(NOW), HOUR, tenant="bob").rows] == ["bob"]
