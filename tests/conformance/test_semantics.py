"""Issue 32: the scheduler keeps its anchors' rules on the job shapes users submit.

Each case is worked out by hand from the anchor's documented rule (cited per test) before running
fedq, through ``fedq simulate`` and, where marked, on the production scheduler (real etcd, manual
clock) with the same starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from federation.models import JobState
from tests.conformance.cases import Rows, simulate
from tests.conformance.production import play
from tests.scheduler.conftest import HarnessFactory


def _job(job_id: str, submit: float, runtime: float, replicas: int, cpu: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": job_id,
        "tenant": extra.pop("tenant", "alice"),
        "queue": extra.pop("queue", "batch"),
        "submit": submit,
        "runtime": runtime,
        "walltime": extra.pop("walltime", runtime),
        "tasks": [{"replicas": replicas, "resources": {"cpu": cpu}}],
        **extra,
    }


def _starts(rows: Rows) -> dict[str, float | None]:
    return {job: float(row["start"]) if row["start"] else None for job, row in rows.items()}


# ---- 1. a gang that fits a cluster's total but not its nodes ---------------------------------------


NODES = [{"count": 4, "resources": {"cpu": 8}}, {"count": 1, "resources": {"cpu": 16}}]


def node_shaped_case() -> dict[str, Any]:
    """Four 8-cpu nodes and one 16-cpu node: 48 cpus in all.

    Volcano's gang plugin (a job runs only when minAvailable tasks are bound to nodes) and its
    predicates (a task goes to one node that fits it): GANG's four 10-cpu tasks each need a node of
    at least 10 cpus, and there is one; no arrangement can ever hold it, whatever the 48-cpu total
    says. So it holds nothing, and nobody waits behind it:
    - RUN (1 x 8 cpu) starts at 0 on an 8-cpu node (binpack: the best fit);
    - GANG at 1 is Unschedulable (no reservation: SLURM's backfill never reserves for a job that
      cannot run on the partition's nodes either);
    - S1 and S2 (2 x 4 cpu each) at 2 each fill an 8-cpu node: both start at 2.
    Before node-shaped feasibility GANG reserved 40 cpus from 60 (RUN's end); S2, ending at 102,
    fit only in the 8 cpus the reservation left, which S1 took: S2 waited until 102.
    """
    return {
        "clusters": [
            {"name": "c1", "nodes": [{"count": 4, "resources": {"cpu": 8}}, {"count": 1, "resources": {"cpu": 16}}]}
        ],
        "queues": [{"name": "batch", "tenants": ["alice", "bob"]}],
        "jobs": [
            _job("RUN", 0, 60, 1, 8),
            _job("GANG", 1, 10, 4, 10, walltime=100),
            _job("S1", 2, 100, 2, 4, tenant="bob"),
            _job("S2", 2, 100, 2, 4, tenant="bob"),
        ],
    }


NODE_SHAPED_STARTS = {"RUN": 0.0, "GANG": None, "S1": 2.0, "S2": 2.0}


def test_a_gang_no_node_arrangement_can_hold_is_unschedulable_and_holds_nothing(tmp_path: Path) -> None:
    rows = simulate(node_shaped_case(), tmp_path)
    assert _starts(rows) == NODE_SHAPED_STARTS
    assert rows["GANG"]["state"] == "Unschedulable"


@pytest.mark.etcd
async def test_node_shaped_feasibility_on_the_production_scheduler(make_harness: HarnessFactory) -> None:
    played = await play(make_harness, node_shaped_case(), until=300)
    assert _starts(await played.rows()) == NODE_SHAPED_STARTS
    gang = await played.harness.job(played.ids["GANG"])
    assert gang.state is JobState.UNSCHEDULABLE  # still queued in production: a cluster may join that fits
    assert "fits no matching cluster's nodes" in gang.reason


# ---- 2. elastic jobs -------------------------------------------------------------------------------


def elastic_case() -> dict[str, Any]:
    """Ten one-cpu nodes. Volcano's rule: a job's gang is minAvailable (PodGroup minMember); it starts
    when its gang fits, and its further tasks run as room allows, shared between jobs by DRF (allocate
    pushes a ready job back into the DRF-ordered queue).
    - E12, 12 tasks with minAvailable 2, starts at 0 with 10 tasks; its last 2 run 100-200: it ends at 200.
    - A and B, 10 tasks each with minAvailable 2, come together at 200: both gangs fit, so both start at
      200 side by side; the 6 cpus left are shared by DRF, 3 each (5 tasks each 200-300, 5 more 300-400):
      both end at 400. Treated as rigid they ran one after the other (A 200-300, B 300-400), and E12
      never started live.
    """
    return {
        "clusters": [{"name": "c1", "nodes": [{"count": 10, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice", "bob"]}],
        "jobs": [
            _job("E12", 0, 100, 12, 1, minAvailable=2),
            _job("A", 200, 100, 10, 1, minAvailable=2),
            _job("B", 200, 100, 10, 1, minAvailable=2, tenant="bob"),
        ],
    }


ELASTIC = {"E12": (0.0, 200.0), "A": (200.0, 400.0), "B": (200.0, 400.0)}


def _spans(rows: Rows) -> dict[str, tuple[float, float]]:
    return {job: (float(row["start"]), float(row["end"])) for job, row in rows.items()}


def test_elastic_jobs_start_with_their_gang_and_share_the_rest(tmp_path: Path) -> None:
    assert _spans(simulate(elastic_case(), tmp_path)) == ELASTIC


@pytest.mark.etcd
async def test_elastic_jobs_on_the_production_scheduler(make_harness: HarnessFactory) -> None:
    played = await play(make_harness, elastic_case(), until=500)
    assert _spans(await played.rows()) == ELASTIC


# ---- 4. reclaim takes the cheapest victims -----------------------------------------------------------


def test_reclaim_takes_the_lowest_priority_victim_first(tmp_path: Path) -> None:
    """Two one-cpu nodes. scratch borrows both: P5 (priority 5) at 0, P0 (priority 0) at 10. At 100
    prod (guaranteed 1 cpu) submits NEED. Reclaim may take one cpu back (scratch keeps its share of
    one), and the victim is the lowest priority (Volcano's priority plugin orders victims by job
    priority; Slurm's preempt/partition_prio and Kueue's preemption both take lower priority first),
    then the most recently started: P0, although P5 was placed first. NEED starts at 100 (grace 30 s
    passed for both); P0 waits in line again and starts at 200, when NEED ends."""
    case = {
        "clusters": [{"name": "c1", "nodes": [{"count": 2, "resources": {"cpu": 1}}]}],
        "queues": [
            {"name": "prod", "guarantee": {"cpu": 1}, "tenants": ["pat"]},
            {"name": "scratch", "acceptSurplus": True, "tenants": ["sam"]},
        ],
        "policy": {"reclaim": {"enabled": True, "grace": "30s"}},
        "jobs": [
            _job("P5", 0, 1000, 1, 1, tenant="sam", queue="scratch", priority=5, preemptible=True),
            _job("P0", 10, 1000, 1, 1, tenant="sam", queue="scratch", priority=0, preemptible=True),
            _job("NEED", 100, 100, 1, 1, tenant="pat", queue="prod"),
        ],
    }
    assert _starts(simulate(case, tmp_path)) == {"P5": 0.0, "P0": 200.0, "NEED": 100.0}


# ---- 3. priority preemption in the federation --------------------------------------------------------


def preemption_case(enabled: bool) -> dict[str, Any]:
    """Four one-cpu nodes, one queue, every job preemptible. LOW1, LOW2 (priority 0) start at 0, MID3
    (priority 5) and LOW4 (priority 0) at 50, each for 1000 s. HIGH (priority 10, a gang of 2) comes
    at 100.

    With ``preemption.enabled`` (Kueue's withinClusterQueue: LowerPriority; Slurm's
    PreemptType=preempt/qos with a lower-priority victim): HIGH may stop strictly lower-priority
    preemptible jobs of its own queue that ran the 30 s grace. Victims lowest priority first, then the
    least run time lost, never more than needed (Kueue's candidate ordering: priority, then the most
    recently admitted): LOW4 (priority 0, 50 s run) and then LOW1 (priority 0, 100 s run, placed before
    LOW2); MID3 stays although it started last. HIGH starts at 100 and ends at 200; LOW1 and LOW4 go
    back to the queue with their place and start again at 200.
    Without it (the default, as in Kueue and Slurm) HIGH waits for the first two ends: 1000.
    """
    jobs = [
        _job("LOW1", 0, 1000, 1, 1, preemptible=True),
        _job("LOW2", 0, 1000, 1, 1, preemptible=True),
        _job("MID3", 50, 1000, 1, 1, priority=5, preemptible=True),
        _job("LOW4", 50, 1000, 1, 1, preemptible=True),
        _job("HIGH", 100, 100, 2, 1, priority=10),
    ]
    policy: dict[str, Any] = {"reclaim": {"enabled": False}}
    if enabled:
        policy["preemption"] = {"enabled": True, "grace": "30s"}
    return {
        "clusters": [{"name": "c1", "nodes": [{"count": 4, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "policy": policy,
        "jobs": jobs,
    }


PREEMPTED_STARTS = {"LOW1": 200.0, "LOW2": 0.0, "MID3": 50.0, "LOW4": 200.0, "HIGH": 100.0}


def test_a_higher_priority_job_preempts_the_cheapest_lower_priority_jobs(tmp_path: Path) -> None:
    assert _starts(simulate(preemption_case(True), tmp_path / "on")) == PREEMPTED_STARTS
    off = _starts(simulate(preemption_case(False), tmp_path / "off"))
    assert off == {"LOW1": 0.0, "LOW2": 0.0, "MID3": 50.0, "LOW4": 50.0, "HIGH": 1000.0}


@pytest.mark.etcd
async def test_priority_preemption_on_the_production_scheduler(make_harness: HarnessFactory) -> None:
    played = await play(make_harness, preemption_case(True), until=300)
    assert _starts(await played.rows()) == PREEMPTED_STARTS
    low1 = await played.harness.job(played.ids["LOW1"])
    assert any(e.reason == f"preempted: by higher-priority job {played.ids['HIGH']}" for e in low1.events)
    assert low1.retries == 0  # a preemption, not a retry


def test_preemption_keeps_to_its_own_budget_per_minute(tmp_path: Path) -> None:
    """Four one-cpu nodes full of priority-0 preemptible jobs since 0; H1 and H2 (priority 10, one cpu
    each) come at 100 with ``preemption.maxPerMinute: 1`` (reclaim off; its budget is its own). H1
    stops LOW1 (all ran 100 s: the first placed goes) and starts at 100. H2 waits until that eviction
    is more than 60 s old, at the first cycle after (cycle period 1 s): 161, when LOW2 goes. LOW1 and
    LOW2 start again as H1 (at 200) and H2 (at 261) end, in the order they went back to the queue."""
    jobs = [_job(f"LOW{n}", 0, 1000, 1, 1, preemptible=True) for n in range(1, 5)]
    jobs += [_job("H1", 100, 100, 1, 1, priority=10), _job("H2", 100, 100, 1, 1, priority=10)]
    case = {
        "clusters": [{"name": "c1", "nodes": [{"count": 4, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "policy": {"reclaim": {"enabled": False}, "preemption": {"enabled": True, "maxPerMinute": 1}},
        "jobs": jobs,
    }
    expected = {"LOW1": 200.0, "LOW2": 261.0, "LOW3": 0.0, "LOW4": 0.0, "H1": 100.0, "H2": 161.0}
    assert _starts(simulate(case, tmp_path)) == expected


def test_a_second_job_takes_the_room_a_first_ones_victim_frees(tmp_path: Path) -> None:
    """One 2-cpu node held by LOW (priority 0, 2 cpus, since 0). H1 and H2 (priority 10, one cpu each)
    come at 100 with preemption on: H1 stops LOW, which frees 2 cpus, so H2 fits in what is being
    released without another victim (never more than needed). Both start at 100; LOW again at 200."""
    case = {
        "clusters": [{"name": "c1", "nodes": [{"count": 1, "resources": {"cpu": 2}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "policy": {"reclaim": {"enabled": False}, "preemption": {"enabled": True}},
        "jobs": [
            _job("LOW", 0, 1000, 1, 2, preemptible=True),
            _job("H1", 100, 100, 1, 1, priority=10),
            _job("H2", 100, 100, 1, 1, priority=10),
        ],
    }
    assert _starts(simulate(case, tmp_path)) == {"LOW": 200.0, "H1": 100.0, "H2": 100.0}


def preemption_grace_case() -> dict[str, Any]:
    """One one-cpu node. LOW (priority 0, preemptible) starts at 0 for 1000 s; HIGH (priority 10) comes
    at 10 with ``preemption.grace: 30s``: a victim must have run 30 s (Kueue has none, Slurm's
    PreemptExemptTime is the same idea), so nothing may be stopped at 10. Nothing else happens until
    LOW's end, yet LOW passes the grace at 30: HIGH preempts it and starts at 30, ends at 130, and LOW
    starts again at 130."""
    return {
        "clusters": [{"name": "c1", "nodes": [{"count": 1, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "policy": {"reclaim": {"enabled": False}, "preemption": {"enabled": True, "grace": "30s"}},
        "jobs": [
            _job("LOW", 0, 1000, 1, 1, preemptible=True),
            _job("HIGH", 10, 100, 1, 1, priority=10),
        ],
    }


def test_preemption_waits_for_the_grace_and_no_longer(tmp_path: Path) -> None:
    assert _starts(simulate(preemption_grace_case(), tmp_path)) == {"LOW": 130.0, "HIGH": 30.0}


@pytest.mark.etcd
async def test_preemption_grace_on_the_production_scheduler(make_harness: HarnessFactory) -> None:
    played = await play(make_harness, preemption_grace_case(), until=300)
    assert _starts(await played.rows()) == {"LOW": 130.0, "HIGH": 30.0}
