"""History downsampling: tiers, exact totals, windows, retention."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.accounting import Accountant, History, Tier
from federation.accounting.history import DAY, HOUR, MINUTE, check_tiers
from policies.clock import ManualClock

T0 = 19_675 * DAY  # a UTC midnight


def test_three_days_of_ten_cores_downsample_to_minutes_hours_and_days_with_the_same_total() -> None:
    clock = ManualClock(T0)
    acct = Accountant(clock, HOUR, {"cpu": 1.0})
    acct.start("j", "alice", "q", "east", {"cpu": 10}, at=T0)
    snap = acct.snapshot(T0 + 3 * DAY)
    history = snap.history[("alice", "q", "east")]
    minutes, hours, days = (len(cells) for cells in history.buckets)
    # At T0 + 3d: hours whose end is over a day old are out of the minute tier (day 3 stays in minutes,
    # 1440 of them); nothing is over 30 days old, so no day buckets; days 1 and 2 are 48 hour buckets.
    assert (minutes, hours, days) == (1440, 48, 0)
    # 10 cores x 3 days = 2,592,000 core-seconds, whatever the tiers (integers: exact in floats).
    assert history.total().seconds == {"cpu": 10 * 3 * DAY}
    assert snap.tenants["alice"].seconds == {"cpu": 10 * 3 * DAY}
    later = acct.snapshot(T0 + 40 * DAY)
    history = later.history[("alice", "q", "east")]
    # At T0 + 40d: the last day in minutes; days ending over 30 days ago (days 0-9) as 10 day buckets;
    # the 29 days between as 696 hour buckets.
    assert [len(cells) for cells in history.buckets] == [1440, 29 * 24, 10]
    assert history.total().seconds == {"cpu": 10 * 40 * DAY}


def test_windows_on_bucket_bounds_are_exact_and_partial_buckets_are_interpolated() -> None:
    history = History()
    history.add(T0, T0 + 30, 10.0, {"cpu": 10.0})  # 300 core-seconds, all in the first half-minute
    history.add(T0 + 3600, T0 + 7200, 2.0, {"cpu": 2.0})  # 7200 core-seconds in the second hour
    assert history.binned([T0, T0 + 60])[0].seconds == {"cpu": 300}
    # The window [T0, T0+30) cuts the minute bucket in half: read as spread evenly, 150 of its 300.
    assert history.binned([T0, T0 + 30])[0].seconds == {"cpu": 150}
    history.compact(T0 + 3 * DAY, None)  # both now in hour buckets
    assert history.buckets[0] == {} and len(history.buckets[1]) == 2
    assert history.binned([T0 + 3600, T0 + 7200])[0].seconds == {"cpu": 7200}
    # Half of the second hour: 3600 of 7200 (exact here, the rate was constant over the hour).
    assert history.binned([T0 + 3600, T0 + 5400])[0].seconds == {"cpu": 3600}
    assert history.binned([T0, T0 + 3600, T0 + 7200])[0].unit_seconds == 300


def test_retention_drops_old_buckets() -> None:
    history = History((Tier(MINUTE, HOUR), Tier(HOUR, None)))
    history.add(T0, T0 + 2 * HOUR, 1.0, {"cpu": 1.0})
    history.compact(T0 + 3 * HOUR + 1, retention=2 * HOUR)
    # The first hour ended 2 h + 1 s ago: dropped; the second (ended 1 h + 1 s ago) stays, as an hour.
    assert history.buckets == [{}, {T0 + HOUR: [HOUR, HOUR]}]


def test_tiers_must_nest() -> None:
    with pytest.raises(ValueError, match="not a multiple"):
        check_tiers([Tier(60, 3600), Tier(90, None)])
    with pytest.raises(ValueError, match="for ever"):
        check_tiers([Tier(60, None), Tier(3600, None)])


def test_changed_chunks_round_trip_and_new_resources_after_old_buckets() -> None:
    history = History()
    history.add(T0, T0 + 60, 1.0, {"cpu": 1.0})
    history.add(T0 + 60, T0 + 120, 3.0, {"cpu": 1.0, "gpu": 2.0})
    history.flush()  # as minutes: the usage is recent at its end, T0 + 2 min
    assert [len(cells) for cells in history.buckets] == [2, 0, 0]
    history.compact(T0 + 2 * DAY, None)
    chunks = history.take_dirty()
    # Both minutes were moved into the hour T0: the minute chunk of that hour is now empty (None:
    # delete it), the hour chunk of that day holds one bucket.
    assert [(width, chunk, data is None) for width, chunk, data in chunks] == [(MINUTE, T0, True), (HOUR, T0, False)]
    assert history.take_dirty() == []
    again = History()
    again.absorb(MINUTE, {"r": ["gpu", "cpu"], "b": []})  # another chunk's resource order: mapped by name
    for width, _, data in chunks:
        if data is not None:
            assert again.absorb(width, data)
    again.settle()
    assert again.total().seconds == {"cpu": 120, "gpu": 120}
    assert again.binned([T0, T0 + HOUR])[0].unit_seconds == 240
    # A chunk of a width no longer configured goes to the next wider tier, to be written again there.
    coarse = History((Tier(DAY, None),))
    assert not coarse.absorb(HOUR, chunks[1][2] or {})
    assert coarse.buckets == [{T0: [240.0, 120.0, 120.0]}] and coarse.dirty


runs = st.lists(
    st.tuples(
        st.floats(0, 5 * DAY, allow_nan=False),  # start offset
        st.floats(0, 2 * DAY, allow_nan=False),  # duration
        st.floats(0.001, 64, allow_nan=False),  # cores
        st.sampled_from(["alice", "bob"]),
        st.sampled_from(["east", "west"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(runs, st.lists(st.floats(0, 40 * DAY, allow_nan=False), max_size=4))
def test_downsampling_keeps_totals(jobs: list[tuple[float, float, float, str, str]], reads: list[float]) -> None:
    """Whatever the order of events, reads and compactions, history totals = what ran (sum of cores x time)."""
    clock = ManualClock(T0)
    acct = Accountant(clock, HOUR, {"cpu": 1.0})
    events = sorted(
        [(T0 + s, 0, i) for i, (s, *_rest) in enumerate(jobs)]
        + [(T0 + s + d, 1, i) for i, (s, d, *_rest) in enumerate(jobs)]
        + [(T0 + r, 2, -1) for r in reads]
    )
    for at, kind, i in events:
        _, _, cores, tenant, cluster = jobs[max(i, 0)]
        if kind == 0:
            acct.start(str(i), tenant, "q", cluster, {"cpu": cores}, at=at)
        elif kind == 1:
            acct.stop(str(i), at=at)
        else:
            acct.snapshot(at)
    end = max(at for at, _, _ in events) + 45 * DAY
    snap = acct.snapshot(end)
    # What ran, from the event times as floats (at T0 ~ 1.7e9 s they are exact to ~2.4e-7 s).
    expected = sum(cores * ((T0 + s + d) - (T0 + s)) for s, d, cores, _, _ in jobs)
    history_total = sum(h.total().seconds.get("cpu", 0.0) for h in snap.history.values())
    assert history_total == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert snap.queues[""].seconds.get("cpu", 0.0) == pytest.approx(expected, rel=1e-9, abs=1e-6)
    window = sum(a.seconds.get("cpu", 0.0) for a in snap.window(T0 - DAY, end).values())
    assert window == pytest.approx(expected, rel=1e-9, abs=1e-6)
    for history in snap.history.values():
        assert len(history.buckets[0]) <= 24 * 60 + 60
        assert all(list(cells) == sorted(cells) for cells in history.buckets)  # each tier in time order


def test_a_year_without_events_goes_straight_to_coarse_buckets() -> None:
    clock = ManualClock(T0)
    acct = Accountant(clock, HOUR, {"cpu": 1.0})
    acct.start("j", "alice", "q", "east", {"cpu": 2}, at=T0)
    history = acct.snapshot(T0 + 365 * DAY).history[("alice", "q", "east")]
    # The last day in minutes, the 29 days before in hours, the 335 days before that in days.
    assert [len(cells) for cells in history.buckets] == [1440, 29 * 24, 335]
    assert history.total().seconds == {"cpu": 2 * 365 * DAY}
    # Written where it belongs: 24 hour-chunks of minutes, 29 day-chunks of hours, 1-2 year-chunks of
    # days; not a chunk per hour of the year, as writing minutes and then moving them would be.
    assert len(history.dirty) <= 24 + 29 + 2
