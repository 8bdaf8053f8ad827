"""Fair share over a window (issue 36): a series as it was at each point, and no drop to 0 between jobs.

The fair share is the tenant's entitlement: its slice of the federation if every tenant wanted
everything, pie-spun in proportion to 1/EUP. HTCondor's manual ("User Priorities and Negotiation";
condor_userprio(1): the effective priority "is used to calculate the user's share when allocating
resources") ties the share to the priority, which follows usage with a half-life:
RUP(t) = b*RUP(t-dt) + (1-b)*rho, b = 0.5**(dt/halfLife), never below 0.5. Slurm's sshare likewise
lists every association's normalized shares and fair-share factor whether or not it has jobs queued.
So a tenant between two jobs keeps a share that moves only as its usage decays.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.accounting import Accountant
from federation.models import JobState, QueueTree, QueueTreeConfig
from federation.reports.facts import JobsRead
from federation.reports.quota import build_quota_report
from policies.clock import ManualClock
from tests.reports.scenario import HOUR, T0, job

LAB: dict[str, Any] = {"queues": [{"name": "lab", "tenants": ["alice", "bob"]}]}
CAPACITY = {"cpu": 10.0}
MINUTES_30 = HOUR / 2


def test_fair_share_is_a_series_and_does_not_drop_to_zero_between_jobs() -> None:
    # Half-life 1 h. alice runs 10 cores over [T0, T0+1h), then nothing: at T0+2h she is between jobs
    # (nothing running, nothing pending). bob never ran (RUP 0.5) and has a job pending.
    acct = Accountant(ManualClock(T0), HOUR, {"cpu": 1.0})
    acct.start("a1", "alice", "lab", "east", {"cpu": 10}, at=T0)
    acct.stop("a1", at=T0 + HOUR)
    now = T0 + 2 * HOUR
    facts = JobsRead.of(
        [
            job("a1", "alice", "lab", JobState.SUCCEEDED, T0, T0, T0 + HOUR, cluster="east", cpu=10),
            job("b1", "bob", "lab", JobState.PENDING, now - 60, cpu=4),
        ]
    )
    tree = QueueTree(QueueTreeConfig.model_validate(LAB))
    report = build_quota_report(acct.snapshot(now), tree, facts, CAPACITY, since=T0, until=now, bins=4)
    rows = {row.tenant: row for row in report.tenants}
    now_share = (rows["alice"].fair_share, rows["bob"].fair_share)
    print(f"fair share now, alice between jobs: alice {now_share[0]:.4f}, bob {now_share[1]:.4f}")
    # By hand (below): alice 0.5 / (2.625 + 0.5) = 0.16. The old rule gave alice 0 here (no demand) and
    # bob 1.0, and alice 1.0 while her job ran: the flip of issue 36.
    assert now_share == pytest.approx((0.16, 0.84)), f"fair share now {now_share}, by hand (0.16, 0.84)"
    assert rows["alice"].fair_share_units == pytest.approx(1.6)  # of 10 cores
    # alice's share = (1/RUP_a) / (1/RUP_a + 1/RUP_b) = 0.5 / (RUP_a + 0.5), at each 30-minute edge:
    #   T0        RUP_a 0.5                                   -> 0.5
    #   T0+30m    0.5**0.5 x 0.5 + (1 - 0.5**0.5) x 10 = 3.28248 -> 0.5 / 3.78248 = 0.13219
    #   T0+1h     0.5 x 0.5 + 0.5 x 10 = 5.25                 -> 0.5 / 5.75    = 0.08696
    #   T0+1h30m  0.5**0.5 x 5.25 = 3.71231 (idle: decays)    -> 0.5 / 4.21231 = 0.11870
    #   T0+2h     0.5 x 5.25 = 2.625                          -> 0.5 / 3.125   = 0.16
    expected = [0.5, 0.13219, 0.08696, 0.11870, 0.16]
    series = report.series
    assert series is not None
    got = series.fair_share.get("alice")
    print(f"alice's fair share at the edges: {got} (by hand {expected})")
    assert got == pytest.approx(expected, abs=5e-5), f"alice's fair-share series {got}, by hand {expected}"
    assert series.fair_share["bob"] == pytest.approx([1 - x for x in expected], abs=5e-5)
    assert series.fair_share_units["alice"] == pytest.approx([10 * x for x in expected], abs=5e-4)  # of 10 cores


def test_a_window_cut_inside_a_minute_bucket_reads_the_bucket_evenly() -> None:
    # 6 cores over [T0, T0+30 s) is 180 core-seconds in the T0 minute bucket: read back as 3 cores over
    # the whole minute, so RUP(T0+60) = 0.5**(60/h) x 0.5 + (1 - 0.5**(60/h)) x 3 with h = 1 h.
    acct = Accountant(ManualClock(T0), HOUR, {"cpu": 1.0})
    acct.start("a1", "alice", "lab", "east", {"cpu": 6}, at=T0)
    acct.stop("a1", at=T0 + 30)
    tree = QueueTree(QueueTreeConfig.model_validate(LAB))
    report = build_quota_report(acct.snapshot(T0 + 60), tree, JobsRead(), CAPACITY, since=T0, until=T0 + 60, bins=1)
    b = 0.5 ** (60 / HOUR)
    rup = b * 0.5 + (1 - b) * 3
    assert report.series is not None
    assert report.series.fair_share["alice"][-1] == pytest.approx(0.5 / (rup + 0.5))


def test_a_job_started_seconds_ago_moves_the_last_point_as_the_meter_does() -> None:
    # 2 cores from T0+40 s, read at T0+45 s: 10 core-seconds in the T0 minute bucket. Spread over the minute
    # (0.17 cores) they would sit under the 0.5 floor and leave the RUP at 0.5; held at today's rate from
    # T0+40 s they give the meter's RUP: 0.5 x b + 2 x (1 - b), b = 0.5**(5/h), h = 1 h.
    acct = Accountant(ManualClock(T0), HOUR, {"cpu": 1.0})
    acct.start("a1", "alice", "lab", "east", {"cpu": 2}, at=T0 + 40)
    tree = QueueTree(QueueTreeConfig.model_validate(LAB))
    report = build_quota_report(acct.snapshot(T0 + 45), tree, JobsRead(), CAPACITY, since=T0, until=T0 + 45, bins=1)
    b = 0.5 ** (5 / HOUR)
    rup = 0.5 * b + 2 * (1 - b)
    alice = report.tenants[0]
    assert report.series is not None and alice.real_priority == pytest.approx(rup)
    assert report.series.fair_share["alice"][-1] == pytest.approx(0.5 / (rup + 0.5)) == pytest.approx(alice.fair_share)
