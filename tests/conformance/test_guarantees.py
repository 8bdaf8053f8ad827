"""Kueue- and Slurm-style guarantees and caps through ``fedq simulate``.

Kueue's ClusterQueue: nominal quota (fedq's ``guarantee``) is the queue's own, borrowing takes what
others leave up to a borrowing limit (fedq's ``cap``), and a queue below its nominal quota reclaims
lent quota by preempting the borrowers (``reclaimWithinCohort``). fedq reclaims only preemptible jobs
that have run at least ``reclaim.grace``, at most ``reclaim.maxPerMinute`` tasks a minute, and takes
a queue back only to its fair-share slice, never below it (nor below its guarantee).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance.cases import Rows, backlog, scenario, simulate, start, started_at

PROD_SCRATCH = [
    {"name": "prod", "guarantee": {"cpu": 6}, "tenants": ["pat"]},
    {"name": "scratch", "acceptSurplus": True, "cap": {"cpu": 8}, "tenants": ["sam"]},
]
RECLAIM = {"enabled": True, "grace": "30s", "maxPerMinute": 20}


def guarantee_case() -> dict[str, Any]:
    jobs = [
        *backlog("s", "sam", "scratch", 10, 0, runtime=1000, preemptible=True),
        *backlog("p", "pat", "prod", 6, 100, runtime=100),
    ]
    return scenario(10, PROD_SCRATCH, jobs, reclaim=RECLAIM)


def check_guarantee(rows: Rows) -> None:
    # jobs.csv keeps a job's last start, so an evicted job shows when it started again.
    # 10 cpus. At 0 scratch alone wants 10 but its cap is 8: s000..s007 start, 2 cpus stay idle.
    # At 100 prod wants 6 = its guarantee: prod's slice 6, scratch's 10 - 6 = 4. prod takes the 2
    # idle cpus, and reclaim (the scratch jobs have run 100 s >= 30 s of grace; 4 <= 20 a minute)
    # evicts 4 scratch jobs (equal priority and start: the first dispatched): all of prod starts
    # at 100. At 200 prod ends: scratch holds the 4 it kept and may take 4 more (cap 8): the 2 that
    # never ran, then 2 of the evicted ones (a requeued job waits behind the jobs of its submit time
    # that were waiting already); the last 2 wait for the first ends at 1000, with 2 cpus idle.
    assert started_at(rows, 100) == {"prod": 6}
    assert [start(rows, f"s{i:03d}") for i in range(10)] == [200.0] * 2 + [1000.0] * 2 + [0.0] * 4 + [200.0] * 2


def test_a_guarantee_is_reclaimed_and_a_cap_never_exceeded(tmp_path: Path) -> None:
    check_guarantee(simulate(guarantee_case(), tmp_path))


def test_reclaim_waits_for_the_grace_period_and_no_longer(tmp_path: Path) -> None:
    jobs = [
        *backlog("s", "sam", "scratch", 10, 0, runtime=1000, preemptible=True),
        *backlog("p", "pat", "prod", 6, 10, runtime=100),
    ]
    rows = simulate(scenario(10, PROD_SCRATCH, jobs, reclaim=RECLAIM), tmp_path)
    # prod arrives at 10: it takes the 2 idle cpus at once; the scratch jobs have run only 10 s of
    # their 30 s grace, so the other 4 prod jobs start when the grace ends, at 30.
    assert started_at(rows, 10) == {"prod": 2}
    assert started_at(rows, 30) == {"prod": 4}


def test_borrowing_stops_at_a_cap_at_every_level(tmp_path: Path) -> None:
    queues = [
        {
            "name": "dept",
            "cap": {"cpu": 40},
            "children": [{"name": "t1", "cap": {"cpu": 10}, "tenants": ["u1"]}, {"name": "t2", "tenants": ["u2"]}],
        },
        {"name": "other", "tenants": ["o"]},
    ]
    jobs = [*backlog("x", "u1", "dept.t1", 100, 0), *backlog("y", "u2", "dept.t2", 100, 0)]
    rows = simulate(scenario(100, queues, jobs), tmp_path)
    # other wants nothing, so dept could borrow all 100, but its cap is 40; inside it t1 stops at
    # its own cap 10 and t2 takes the rest of dept's 40. 60 cpus stay idle.
    assert started_at(rows, 0) == {"dept.t1": 10, "dept.t2": 30}


def test_lending_does_not_starve_the_lender(tmp_path: Path) -> None:
    queues = [
        {"name": "lender", "guarantee": {"cpu": 50}, "tenants": ["len"]},
        {"name": "borrower", "acceptSurplus": True, "tenants": ["bor"]},
    ]
    jobs = [
        *backlog("b", "bor", "borrower", 100, 0, runtime=10_000, preemptible=True),
        *backlog("l", "len", "lender", 50, 100, runtime=100),
    ]
    reclaim = {"enabled": True, "grace": "30s", "maxPerMinute": 50}
    rows = simulate(scenario(100, queues, jobs, reclaim=reclaim), tmp_path)
    # The lender is idle at 0: the borrower takes all 100. At 100 the lender wants its 50: its slice
    # is its guarantee (50), the borrower's the other 50, so reclaim takes back 50 (run 100 s >= 30 s
    # of grace, 50 <= 50 a minute) and the whole of the lender's demand starts at once.
    assert started_at(rows, 100) == {"lender": 50}
    # The 50 evicted (the first dispatched) start again when the lender's jobs end, at 200.
    assert [start(rows, f"b{i:03d}") for i in range(100)] == [200.0] * 50 + [0.0] * 50
