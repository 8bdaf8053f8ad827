"""``federation.whatif.compare``: per-group numbers, their change and the baseline's fidelity, on worked
examples whose numbers were computed by hand (each step in the comments)."""

from __future__ import annotations

import pytest

from federation.lifecycle import JobEvent, JobState
from federation.simulator.records import JobOutcome
from federation.whatif.compare import Replay, compare, fidelity, group_stats, preempted_jobs

CPU4 = {"cpu": 4.0}
VISION, NLP = "research.vision", "research.nlp"


def _job(job: str, tenant: str, queue: str, submit: float, start: float, end: float, cpu: float) -> JobOutcome:
    return JobOutcome(job, tenant, queue, submit, "Succeeded", {"cpu": cpu}, "east", start, end)


def _replay(records: list[JobOutcome], shares: dict[str, float], preempted: frozenset[str] = frozenset()) -> Replay:
    queues = {VISION: shares["alice"], NLP: shares["carol"]}
    return Replay(records, CPU4, shares, queues, preempted, {"cpu": 0.5})


# Baseline, on 4 CPUs:
#   a1 alice/vision submit 0, runs 0-100 on 2 CPUs: wait 0, run 100, slowdown max(1, 100/100) = 1, usage 2*100/4 = 50
#   a2 alice/vision submit 0, runs 20-40 on 2 CPUs: wait 20, run 20, slowdown (20+20)/20 = 2,   usage 2*20/4 = 10
#   c1 carol/nlp submit 10, runs 40-45 on 4 CPUs:  wait 30, run 5,  slowdown (30+5)/max(5,10) = 3.5, usage 4*5/4 = 5
BASELINE = [
    _job("a1", "alice", VISION, 0, 0, 100, 2),
    _job("a2", "alice", VISION, 0, 20, 40, 2),
    _job("c1", "carol", NLP, 10, 40, 45, 4),
]
# Candidate (nlp's weight doubled): c1 runs 10-15 (wait 0, slowdown max(1, 5/10) = 1), a2 runs 15-35 (wait 15,
# slowdown (15+20)/20 = 1.75), and a1 is preempted once (its history says so) but ends as before.
CANDIDATE = [
    _job("a1", "alice", VISION, 0, 0, 100, 2),
    _job("a2", "alice", VISION, 0, 15, 35, 2),
    _job("c1", "carol", NLP, 10, 10, 15, 4),
]


def test_group_numbers_by_hand() -> None:
    stats = group_stats(_replay(BASELINE, {"alice": 0.5, "carol": 0.5}), lambda r: r.tenant, {"alice": 0.5})
    alice, carol = stats["alice"], stats["carol"]
    print(f"alice {alice}\ncarol {carol}")
    assert alice.jobs == 2 and alice.mean_wait == 10.0  # (0 + 20) / 2
    assert alice.p95_wait == 20.0  # nearest rank: ceil(0.95 * 2) = 2nd of [0, 20]
    assert alice.mean_bounded_slowdown == 1.5  # (1 + 2) / 2
    assert alice.usage_share == pytest.approx(60 / 65)  # (50 + 10) / (50 + 10 + 5)
    assert alice.fair_share == 0.5 and carol.fair_share is None  # a target only where the tree gives one
    assert carol.mean_wait == 30.0 and carol.p95_wait == 30.0 and carol.mean_bounded_slowdown == 3.5
    assert carol.usage_share == pytest.approx(5 / 65) and carol.preempted == 0


def test_change_is_candidate_minus_baseline_per_tenant_and_queue() -> None:
    events = {"a1": [JobEvent(time=50, source=JobState.RUNNING, target=JobState.RUNNING, reason="preempted: reclaim")]}
    preempted = preempted_jobs({**events, "a2": [], "c1": []})
    assert preempted == {"a1"}
    result = compare(
        _replay(BASELINE, {"alice": 0.5, "carol": 0.5}),
        _replay(CANDIDATE, {"alice": 1 / 3, "carol": 2 / 3}, preempted),
    )
    alice, carol = result["tenants"]["alice"], result["tenants"]["carol"]
    print(f"alice change {alice['change']}\ncarol change {carol['change']}")
    assert alice["candidate"]["mean_wait"] == 7.5 and alice["change"]["mean_wait"] == -2.5  # (0 + 15) / 2 - 10
    assert alice["change"]["mean_bounded_slowdown"] == pytest.approx(-0.125)  # (1 + 1.75) / 2 - 1.5
    assert alice["candidate"]["preempted"] == 1 and alice["change"]["preempted"] == 1
    assert carol["change"]["mean_wait"] == -30.0 and carol["change"]["p95_wait"] == -30.0
    assert carol["change"]["mean_bounded_slowdown"] == -2.5  # 1 - 3.5
    assert carol["change"]["fair_share"] == pytest.approx(2 / 3 - 1 / 2)
    # Usage is the same (same runs, moved in time), so shares do not change: 60/65 and 5/65 both times.
    assert alice["change"]["usage_share"] == pytest.approx(0.0)
    assert result["queues"][NLP]["change"]["mean_wait"] == -30.0 and set(result["queues"]) == {VISION, NLP}
    assert result["utilization"] == {"baseline": {"cpu": 0.5}, "candidate": {"cpu": 0.5}}


def test_fidelity_by_hand() -> None:
    """Recorded starts a1 0.5, a2 21, c1 43 against the replay's 0, 20, 40: errors 0.5, 1, 3; median by
    nearest rank = the ceil(0.5 * 3) = 2nd = 1; p90 = the ceil(0.9 * 3) = 3rd = 3; max 3. x started only in
    the record, y only in the replay, q in neither; z was not exported and is not compared."""
    replayed = [
        *BASELINE,
        JobOutcome("x", "alice", VISION, 0, "Unschedulable"),
        JobOutcome("y", "alice", VISION, 0, "Succeeded", {"cpu": 1}, "east", 5, 6),
        JobOutcome("q", "alice", VISION, 0, "Unschedulable"),
        JobOutcome("z", "alice", VISION, 0, "Succeeded", {"cpu": 1}, "east", 9, 10),
    ]
    recorded = {"a1": 0.5, "a2": 21.0, "c1": 43.0, "x": 7.0, "y": None, "q": None}
    found = fidelity(replayed, recorded)
    print(found)
    assert (found.compared, found.median, found.p90, found.max) == (3, 1.0, 3.0, 3.0)
    assert (found.only_recorded, found.only_replayed) == (1, 1)
    nothing = fidelity([JobOutcome("q", "alice", VISION, 0, "Unschedulable")], {"q": None})
    assert (nothing.compared, nothing.median, nothing.p90, nothing.max) == (0, None, None, None)
