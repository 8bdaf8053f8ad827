"""The event loop's timing: exact instants, same-instant events, moments that matter by time alone;
and the helpers around it (policy presets, fair-share targets, SWF-to-scenario mapping)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.config import FederationConfig
from federation.models import QueueTree, QueueTreeConfig
from federation.simulator.engine import simulate
from federation.simulator.entitlement import fair_shares
from federation.simulator.run import with_policy
from federation.simulator.scenario import Scenario, ScenarioFile
from federation.simulator.swf import SwfJob, SwfTrace
from federation.simulator.trace import scenario_from_swf
from tests.simulator.sim_cli import scenario_job as job


def scenario(nodes: int, jobs: list[dict[str, Any]], **document: Any) -> Scenario:
    return ScenarioFile.model_validate(
        {
            "clusters": [{"name": "east", "nodes": [{"count": nodes, "resources": {"cpu": 1}}]}],
            "queues": document.pop("queues", [{"name": "batch"}]),
            "jobs": jobs,
            **document,
        }
    ).build()


def starts(s: Scenario) -> dict[str, float | None]:
    return {r.id: r.start for r in simulate(s).records}


def test_start_times_are_exact_not_rounded_to_a_cycle() -> None:
    # 1 cpu. a runs [0.25, 10.75); b, submitted at 3.5, starts the instant a ends.
    assert starts(scenario(1, [job("a", 0.25, 10.5), job("b", 3.5, 1)])) == {"a": 0.25, "b": 10.75}


def test_everything_at_one_instant_is_handled_before_time_moves() -> None:
    # 2 cpu. At 10 a (2 cpu) ends and b (2 cpu) arrives: b starts at 10, not one cycle later. z (1 cpu,
    # walltime 5, but it runs 0 s) also arrives at 10, after b in the file: it waits for b, until 20.
    # At 20 c (2 cpu) arrives: z goes first (submitted earlier) and c, finding one cpu free, reserves
    # from 25 (z's walltime end). But z ends at 20, the instant it starts, and that end is handled at
    # 20 too: c starts at 20.
    got = starts(
        scenario(2, [job("a", 0, 10, 2), job("b", 10, 10, 2), job("z", 10, 0, walltime=5), job("c", 20, 5, 2)])
    )
    assert got == {"a": 0.0, "b": 10.0, "z": 20.0, "c": 20.0}


RECLAIM_QUEUES = [{"name": "prod", "guarantee": {"cpu": 2}}, {"name": "scratch"}]


def _borrowers(submit: float) -> list[dict[str, Any]]:
    return [job(f"s{n}", submit, 1000, queue="scratch", tenant="sam", preemptible=True) for n in range(1, 5)]


def test_reclaim_waits_for_the_grace_period() -> None:
    jobs = [*_borrowers(90), job("p1", 100, 100, queue="prod", tenant="pat")]
    got = starts(scenario(4, jobs, queues=RECLAIM_QUEUES, policy={"reclaim": {"grace": "30s"}}))
    # The borrowers started at 90; reclaim may evict a run only after it ran 30 s: at 120, not at 100
    # when p1 arrives. s1 (first dispatched) is evicted, p1 starts at 120, and s1 again at 220.
    assert got == {"s1": 220.0, "s2": 90.0, "s3": 90.0, "s4": 90.0, "p1": 120.0}


def test_reclaim_keeps_to_its_eviction_budget() -> None:
    jobs = [*_borrowers(0), job("p1", 100, 100, queue="prod", tenant="pat"), job("p2", 100, 100, queue="prod")]
    got = starts(scenario(4, jobs, queues=RECLAIM_QUEUES, policy={"reclaim": {"grace": "30s", "maxPerMinute": 1}}))
    # One eviction per minute. At 100 s1 goes and p1 starts; p2 waits until the eviction is more than
    # 60 s old, at the service's first cycle after that (cycle period 1 s): 161, when s2 goes. s1 and
    # s2 start again as p1 (at 200) and p2 (at 261) end, in the order they went back to the queue.
    assert got == {"s1": 200.0, "s2": 261.0, "s3": 0.0, "s4": 0.0, "p1": 100.0, "p2": 161.0}


def test_policy_presets() -> None:
    base = FederationConfig.model_validate({"reservation": {"after": "5m", "depth": 3}, "backfill": False})
    fcfs, easy, conservative = (with_policy(base, name) for name in ("fcfs", "easy", "conservative"))
    assert (fcfs.backfill, fcfs.reservation.depth) == (False, 1)
    assert (easy.backfill, easy.reservation.depth) == (True, 1)
    assert (conservative.backfill, conservative.reservation.depth) == (True, "all")
    assert conservative.reservation.after == 300  # only depth and backfill change
    with pytest.raises(ValueError, match="unknown policy"):
        with_policy(base, "sjf")


def test_fair_shares_from_weights_of_active_queues() -> None:
    tree = QueueTree(
        QueueTreeConfig.model_validate(
            {
                "queues": [
                    {
                        "name": "research",
                        "weight": 3,
                        "children": [{"name": "vision", "weight": 1}, {"name": "nlp", "weight": 1}],
                    },
                    {"name": "prod", "weight": 1},
                    {"name": "idle", "weight": 4},
                ]
            }
        )
    )
    shares = fair_shares(tree, [("alice", "research.vision"), ("bob", "research.vision"), ("carol", "prod")])
    # idle and research.nlp have no jobs, so they do not compete. research: 3 / (3 + 1) = 0.75, and
    # vision is its only active child: 0.75, split between alice and bob: 0.375 each. prod: 0.25.
    assert shares == pytest.approx({"alice": 0.375, "bob": 0.375, "carol": 0.25})


def test_swf_machine_split_and_job_mapping() -> None:
    trace = SwfTrace(path="t.swf", header={"MaxNodes": "10", "MaxProcs": "40"})
    trace.jobs = [SwfJob(1, 0.0, 50.0, 80.0, 6, 3, 2), SwfJob(2, 5.0, 20.0, 20.0, 1, -1, -1)]
    s = scenario_from_swf(trace, FederationConfig(), clusters=3, queue_by="group")
    # 10 nodes of 40 / 10 = 4 cpus, split 4 + 3 + 3.
    assert [len(c.nodes) for c in s.clusters] == [4, 3, 3]
    assert {n.allocatable["cpu"] for c in s.clusters for n in c.nodes} == {4.0}
    first = s.jobs[0]
    assert (first.tenant, first.spec.queue, first.spec.walltime, first.runtime) == ("user3", "group2", 80.0, 50.0)
    assert [(t.replicas, t.resources, t.runtime) for t in first.spec.tasks] == [(6, {"cpu": 1.0}, 50.0)]
    assert (s.jobs[1].tenant, s.jobs[1].spec.queue) == ("user-unknown", "group-unknown")
    assert [q.name for q in s.queues.queues] == ["group-unknown", "group2"]


def test_a_job_over_its_queue_cap_never_runs_and_says_why() -> None:
    capped = [{"name": "batch", "cap": {"cpu": 1}}]
    result = simulate(scenario(4, [job("wide", 0, 10, 2), job("narrow", 0, 10)], queues=capped))
    # The cluster could hold "wide" (2 cpu) at any time, but its queue may never hold more than 1 cpu:
    # no event is left after "narrow" ends at 10, and "wide" is recorded as never having run.
    outcome = {r.id: (r.state, r.start) for r in result.records}
    assert outcome == {"wide": ("Unschedulable", None), "narrow": ("Succeeded", 0.0)}
    assert result.reasons["wide"].startswith("still waiting") and "queue batch" in result.reasons["wide"]
