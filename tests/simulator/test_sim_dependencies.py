"""A DAG workflow through ``fedq simulate`` (issue 23, acceptance 2): the scenario's ``dependsOn`` goes
through the production dependency index and lifecycle, and the start times are the hand-checked ones
in configs/scenarios/dag.yaml's header."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sim_cli import SCENARIOS, scenario_job, simulate_scenario, starts

from federation.simulator.engine import simulate
from federation.simulator.scenario import load_scenario


def test_a_dag_runs_in_dependency_order(tmp_path: Path) -> None:
    rows = simulate_scenario("dag", tmp_path)
    # Two one-cpu nodes. prep and broken start at 0; at 10 prep ends and train-a (first in file order)
    # takes the free cpu, train-b waits for one; at 40 train-a ends and broken is killed at its
    # walltime (Failed), which frees cleanup (afternotok) and cancels publish (afterok); train-b and
    # cleanup take the two cpus; merge needs both and starts when train-b ends at 60; report
    # (afterany on merge and cleanup) at 65.
    assert starts(rows) == {
        "prep": 0.0,
        "train-a": 10.0,
        "train-b": 40.0,
        "merge": 60.0,
        "broken": 0.0,
        "cleanup": 40.0,
        "publish": None,
        "report": 65.0,
    }
    assert {job: rows[job]["state"] for job in ("broken", "publish", "report")} == {
        "broken": "Failed",
        "publish": "Cancelled",
        "report": "Succeeded",
    }


def _scenario(tmp_path: Path, jobs: list[dict[str, object]]) -> Path:
    path = tmp_path / "s.yaml"
    document = yaml.safe_load((SCENARIOS / "dag.yaml").read_text())
    path.write_text(yaml.safe_dump({**document, "jobs": jobs}))
    return path


def test_a_cycle_or_an_unknown_job_is_refused(tmp_path: Path) -> None:
    ring = [
        scenario_job("a", 0, 1, dependsOn=[{"job": "b"}]),
        scenario_job("b", 0, 1, dependsOn=[{"job": "a"}]),
    ]
    with pytest.raises(ValueError, match="dependency cycle: a -> b -> a"):
        load_scenario(_scenario(tmp_path, ring))
    unknown = [scenario_job("a", 0, 1, dependsOn=[{"job": "nope"}])]
    with pytest.raises(ValueError, match=r"jobs\[0\].dependsOn\[0\].job: no job 'nope'"):
        load_scenario(_scenario(tmp_path, unknown))


def test_a_job_that_waits_on_one_never_run_says_so(tmp_path: Path) -> None:
    jobs = [
        scenario_job("huge", 0, 10, cpus=2, queue="batch", tenant="ann"),
        scenario_job("after", 0, 1, queue="batch", tenant="ann", dependsOn=[{"job": "huge"}]),
    ]
    document = yaml.safe_load((SCENARIOS / "dag.yaml").read_text())
    document["clusters"][0]["nodes"] = [{"count": 1, "resources": {"cpu": 1}}]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**document, "jobs": jobs}))
    result = simulate(load_scenario(path))
    assert {r.id: r.state for r in result.records} == {"huge": "Unschedulable", "after": "Unschedulable"}
    assert "its dependencies were never met" in result.reasons["after"]
