"""A scenario job keeps the spec fields the member agent and the lifecycle read (issue 32, observation 5):
``placement`` reaches the simulated member's local session, ``maxRetries`` the lifecycle's retry rule."""

from __future__ import annotations

from typing import Any

from sim_cli import scenario_job

from federation.simulator.engine import simulate
from federation.simulator.scenario import ScenarioFile


def _run(scenario_jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], **policy: Any) -> Any:
    document = {
        "clusters": [{"name": "east", "nodes": nodes}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "policy": policy,
        "jobs": scenario_jobs,
    }
    return simulate(ScenarioFile.model_validate(document).build())


def _starts(placement: str) -> dict[str, float | None]:
    # Two two-cpu nodes. wide (two one-cpu tasks) comes first and runs 0 -> 100; whole wants two cpus
    # of one node. Packed, wide fills one node and whole runs at 0 on the other; spread, wide takes a
    # cpu of each node and whole waits for its end at 100.
    jobs = [
        scenario_job("wide", 0, 100, cpus=2, placement=placement),
        {**scenario_job("whole", 0, 10), "tasks": [{"resources": {"cpu": 2}}]},
    ]
    result = _run(jobs, [{"count": 2, "resources": {"cpu": 2}}], reservation={"depth": 0})
    return {r.id: r.start for r in result.records}


def test_a_spread_job_has_a_node_per_task() -> None:
    assert _starts("pack") == {"wide": 0.0, "whole": 0.0}
    assert _starts("spread") == {"wide": 0.0, "whole": 100.0}


def test_a_failing_job_is_retried_exactly_max_retries_times() -> None:
    # Each run fails at its runtime's end (10 s); the policy would retry 3 times, the job says 2:
    # runs at 0, 20 (backoff 10) and 50 (backoff 20), then it ends Failed.
    failing = scenario_job("flaky", 0, 10, maxRetries=2)
    failing["tasks"][0]["env"] = {"FEDQ_SIM_EXIT_CODE": "3"}
    result = _run([failing], [{"count": 1, "resources": {"cpu": 1}}], jobs={"maxRetries": 3, "retryBackoff": "10s"})
    record = result.records[0]
    runs = [e.time for e in result.events["flaky"] if e.target.value == "Running"]
    assert (record.state, runs, record.end) == ("Failed", [0.0, 20.0, 50.0], 60.0)
    assert result.reasons["flaky"] == "exit code 3 (after 2 retries)"
