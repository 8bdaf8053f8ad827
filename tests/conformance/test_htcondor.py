"""HTCondor's fair share, case by case, through ``fedq simulate``.

The maths, from HTCondor's manual ("User Priorities and Negotiation", "Hierarchical Group Quotas"):
- real user priority RUP(t) = b*RUP(t-dt) + (1-b)*rho, b = 0.5**(dt/halfLife), never below 0.5
  (rho = cpus in use, 1 unit a cpu here); an idle user's RUP only decays: max(0.5, b*RUP);
- effective priority EUP = RUP x priorityFactor / weight (fedq's queue weight divides, as a group
  quota's share would);
- the pie spin: capacity is handed out in proportion to 1/EUP, no one past its demand, what one
  cannot take spun again to the others; fedq spins it at every level of the queue tree.
fedq serves the most starved first (held / slice; among those holding nothing, the biggest slice
first) and lets a queue below its slice take one job more, so a slice s gives ceil(s) one-cpu jobs
unless capacity runs out first (then the last cpu goes to whoever is further below its slice).
Every history below starts at RUP 0.5 (a new user) at t = 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance.cases import DAY, Rows, backlog, job, scenario, simulate, started_at


def rup_after(rup: float, rate: float, dt: float, half_life: float) -> float:
    """HTCondor's update, written out here so each case shows its arithmetic (policies.shares has
    the production copy; these tests do not read it)."""
    b = 0.5 ** (dt / half_life)
    return max(0.5, b * rup + (1 - b) * rate)


def two_queues(**extra: dict[str, object]) -> list[dict[str, object]]:
    return [
        {"name": "qa", "weight": 1, "acceptSurplus": True, "tenants": ["alice"], **extra.get("qa", {})},
        {"name": "qb", "weight": 1, "acceptSurplus": True, "tenants": ["bob"], **extra.get("qb", {})},
    ]


def newcomer_case() -> dict[str, Any]:
    """Issue 21's two-queue case: the conf once capped qb at its weight's half (50/50)."""
    history = job("H", "alice", "qa", 0, 2 * DAY, cpus=100)
    jobs = [history, *backlog("a", "alice", "qa", 150, 2 * DAY), *backlog("b", "bob", "qb", 150, 2 * DAY)]
    return scenario(100, two_queues(), jobs)


def check_newcomer(rows: Rows) -> None:
    # qa ran 100 cpus for two half-lives: RUP = 0.25*0.5 + 0.75*100 = 75.125; qb is new: 0.5.
    assert abs(rup_after(0.5, 100, 2 * DAY, DAY) - 75.125) < 1e-9
    # Slices of 100 by 1/EUP: qa = 100 * (1/75.125) / (1/75.125 + 1/0.5) = 0.661, qb = 99.339.
    # qb (bigger slice) goes first; qa, below its 0.661, takes one job; qb takes the other 99.
    assert started_at(rows, 2 * DAY) == {"qb": 99, "qa": 1}


def test_newcomer_queue_gets_its_decayed_slice_not_half(tmp_path: Path) -> None:
    check_newcomer(simulate(newcomer_case(), tmp_path))


def test_pie_spin_with_priority_factors(tmp_path: Path) -> None:
    queues = two_queues(qb={"priorityFactor": 3})
    jobs = [*backlog("a", "alice", "qa", 150, 0), *backlog("b", "bob", "qb", 150, 0)]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # Both new (RUP 0.5): EUP qa = 0.5, qb = 0.5 * 3 = 1.5. Slices by 1/EUP = 2 : 2/3, of 100:
    # qa 100 * 2 / (8/3) = 75, qb 25, both whole numbers, so each starts exactly its slice.
    assert started_at(rows, 0) == {"qa": 75, "qb": 25}


def test_pie_spin_gives_what_a_small_demand_leaves_to_the_others(tmp_path: Path) -> None:
    queues = [{"name": q, "tenants": [q]} for q in ("qa", "qb", "qc")]
    jobs = [*backlog("a", "qa", "qa", 150, 0), *backlog("b", "qb", "qb", 150, 0), *backlog("c", "qc", "qc", 10, 0)]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # Equal EUPs: a third each (33.3), but qc wants only 10; its 23.3 left over is spun again to qa
    # and qb equally: 10, 45, 45.
    assert started_at(rows, 0) == {"qa": 45, "qb": 45, "qc": 10}


@pytest.mark.parametrize(
    ("surplus", "expected"),
    [
        # GROUP_ACCEPT_SURPLUS = False: a group never runs past its quota, even with cpus idle.
        # physics: min(quota 40, demand 150) = 40; chemistry: min(60, 20) = 20; 40 cpus stay idle.
        (False, {"physics": 40, "chemistry": 20}),
        # GROUP_ACCEPT_SURPLUS = True: floors physics 40, chemistry min(60, 20) = 20; the 40 that
        # chemistry leaves go to whoever still wants: physics 80.
        (True, {"physics": 80, "chemistry": 20}),
    ],
)
def test_group_quotas_with_and_without_surplus(tmp_path: Path, surplus: bool, expected: dict[str, int]) -> None:
    queues = [
        {"name": "physics", "guarantee": {"cpu": 40}, "acceptSurplus": surplus, "tenants": ["pia"]},
        {"name": "chemistry", "guarantee": {"cpu": 60}, "acceptSurplus": surplus, "tenants": ["cho"]},
    ]
    jobs = [*backlog("p", "pia", "physics", 150, 0), *backlog("c", "cho", "chemistry", 20, 0)]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    assert started_at(rows, 0) == expected


def _surplus_tree(a1_demand: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    queues = [
        {
            "name": "ga",
            "guarantee": {"cpu": 60},
            "children": [
                {"name": "a1", "guarantee": {"cpu": 30}, "tenants": ["ann"]},
                {"name": "a2", "guarantee": {"cpu": 30}, "tenants": ["amy"]},
            ],
        },
        {"name": "gb", "guarantee": {"cpu": 40}, "tenants": ["ben"]},
    ]
    jobs = [
        *backlog("x", "ann", "ga.a1", a1_demand, 0),
        *backlog("y", "amy", "ga.a2", 10, 0),
        *backlog("z", "ben", "gb", 150, 0),
    ]
    return queues, jobs


def test_surplus_flows_to_siblings_first(tmp_path: Path) -> None:
    queues, jobs = _surplus_tree(a1_demand=150)
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # Top: ga's floor 60 and gb's 40 fill the 100. In ga: a1 30, a2 min(30, 10) = 10, and the 20
    # a2 leaves stay in ga and go to its other child: a1 50. gb keeps its 40.
    assert started_at(rows, 0) == {"ga.a1": 50, "ga.a2": 10, "gb": 40}


def test_surplus_flows_up_when_no_sibling_wants_it(tmp_path: Path) -> None:
    queues, jobs = _surplus_tree(a1_demand=20)
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # ga wants only 20 + 10 = 30 of its 60: the 30 left go up, to gb: 40 + 30 = 70.
    assert started_at(rows, 0) == {"ga.a1": 20, "ga.a2": 10, "gb": 70}


def test_a_group_below_its_quota_is_served_first(tmp_path: Path) -> None:
    """prod used the cluster the day before (its RUP is far worse than alpha's), but it is below its
    quota; the negotiator serves groups below their quota before any surplus."""
    queues = [
        {"name": "alpha", "acceptSurplus": True, "tenants": ["al"]},
        {"name": "prod", "guarantee": {"cpu": 4}, "tenants": ["pat"]},
    ]
    jobs = [
        job("H", "pat", "prod", 0, DAY, cpus=4),
        job("A", "al", "alpha", DAY, 100, cpus=4),  # first in file order, and a name that sorts first
        job("P", "pat", "prod", DAY, 100, cpus=4),
    ]
    rows = simulate(scenario(4, queues, jobs), tmp_path)
    # At 1d, 4 cpus: prod's floor is its quota, min(4, 4) = 4, which is all of it: alpha's slice
    # is 0. P starts at once; A waits for P's end at 1d + 100.
    assert started_at(rows, DAY) == {"prod": 1}
    assert started_at(rows, DAY + 100) == {"alpha": 1}


def test_newcomer_tenant_against_a_heavy_past_user_in_one_queue(tmp_path: Path) -> None:
    queues = [{"name": "research", "tenants": ["alice", "bob"]}]
    history = job("H", "alice", "research", 0, 2 * DAY, cpus=100)
    jobs = [history, *backlog("a", "alice", "research", 150, 2 * DAY), *backlog("b", "bob", "research", 150, 2 * DAY)]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # The leaf's 100 spun between its tenants as the queues above: alice RUP 75.125, bob 0.5;
    # slices 0.661 and 99.339: bob 99, alice 1.
    assert started_at(rows, 2 * DAY, by="tenant") == {"bob": 99, "alice": 1}


def test_newcomer_against_a_heavy_past_user_two_levels_down(tmp_path: Path) -> None:
    """Usage counts at every level: ml's past use makes its whole department eng the heavy one."""
    queues = [
        {
            "name": "eng",
            "children": [{"name": "ml", "tenants": ["ann"]}, {"name": "web", "tenants": ["wes"]}],
        },
        {"name": "sci", "children": [{"name": "bio", "tenants": ["bea"]}]},
    ]
    jobs = [
        job("H", "ann", "eng.ml", 0, DAY, cpus=100),
        *backlog("m", "ann", "eng.ml", 150, DAY),
        *backlog("w", "wes", "eng.web", 150, DAY),
        *backlog("b", "bea", "sci.bio", 150, DAY),
    ]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # ml (and so eng) ran 100 cpus for one half-life: RUP = 0.5*0.5 + 0.5*100 = 50.25.
    rup = rup_after(0.5, 100, DAY, DAY)
    assert abs(rup - 50.25) < 1e-9
    # Top: eng = 100 * (1/50.25) / (1/50.25 + 2) = 0.985, sci 99.015. In eng: ml 0.0097, web 0.975.
    # sci goes first, then eng, where web (bigger slice) goes before ml: web takes one job, which
    # fills eng's 0.985. sci takes the other 99; ml, the heavy user, gets nothing.
    assert started_at(rows, DAY) == {"sci.bio": 99, "eng.web": 1}


def test_usage_decays_back_to_equal_shares(tmp_path: Path) -> None:
    """A heavy user's RUP halves each half-life until it meets the 0.5 floor: 50.25 / 2**n <= 0.5
    from n = 7 (log2(100.5) = 6.65), after which the two queues are equal again."""
    for idle_days, expected in ((6, {"qa": 39, "qb": 61}), (7, {"qa": 50, "qb": 50})):
        at = DAY + idle_days * DAY
        jobs = [job("H", "alice", "qa", 0, DAY, cpus=100), *backlog("a", "alice", "qa", 150, at)]
        jobs += backlog("b", "bob", "qb", 150, at)
        rows = simulate(scenario(100, two_queues(), jobs), tmp_path / str(idle_days))
        # 6 half-lives idle: RUP 50.25 / 64 = 0.785; qa's slice 100 * (1/0.785) / (1/0.785 + 2) =
        # 38.9, qb 61.1. Served by held/slice, qa reaches 39 (38 < 38.9 lets it take one more) as
        # qb reaches 61, and the cluster is full. 7 half-lives: RUP 0.393 -> the floor 0.5: 50/50.
        assert started_at(rows, at) == expected, idle_days


def test_older_usage_decays_below_newer(tmp_path: Path) -> None:
    """Half-life 100 s: qa used 3 cpus for [0, 1000), qb 3 cpus for [1000, 1100); at 1100 qa's old
    usage weighs less than qb's recent usage, so qa gets the bigger slice."""
    jobs = [
        job("HA", "alice", "qa", 0, 1000, cpus=3),
        job("HB", "bob", "qb", 1000, 100, cpus=3),
        *backlog("a", "alice", "qa", 3, 1100, runtime=100),
        *backlog("b", "bob", "qb", 3, 1100, runtime=100),
    ]
    rows = simulate(scenario(3, two_queues(), jobs, fairshare={"halfLife": "100s"}), tmp_path)
    rup_a = rup_after(rup_after(0.5, 3, 1000, 100), 0, 100, 100)  # 2.99756 at 1000, halved: 1.49878
    rup_b = rup_after(0.5, 3, 100, 100)  # 0.5*0.5 + 0.5*3 = 1.75
    assert abs(rup_a - 1.49878) < 1e-5 and rup_b == 1.75
    # Slices of 3 by 1/RUP: qa 3 * 0.66721 / (0.66721 + 0.57143) = 1.616, qb 1.384. qa goes first
    # (1/1.616 = 0.62 after), then qb (1/1.384 = 0.72), then qa again (0.62 < 0.72): qa 2, qb 1.
    assert started_at(rows, 1100) == {"qa": 2, "qb": 1}
