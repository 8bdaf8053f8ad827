"""Hold and release at given times through ``fedq simulate`` (issue 23): the scenario's actions go
through the production lifecycle and the scheduler's one rule of which queued jobs it may consider,
and the start times are the hand-checked ones in configs/scenarios/hold.yaml's header."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sim_cli import SCENARIOS, scenario_job, simulate_scenario, starts

from federation.simulator.engine import simulate
from federation.simulator.scenario import load_scenario


def test_held_jobs_wait_in_line_until_released(tmp_path: Path) -> None:
    rows = simulate_scenario("hold", tmp_path)
    assert starts(rows) == {"a": 0.0, "urgent": 20.0, "b": 40.0, "c": 10.0, "never": None, "late": 25.0}
    assert {job: row["state"] for job, row in rows.items()} == {
        **dict.fromkeys(("a", "urgent", "b", "c", "late"), "Succeeded"),
        "never": "Unschedulable",
    }
    result = simulate(load_scenario(SCENARIOS / "hold.yaml"))
    assert result.reasons["never"] == "still waiting when nothing else could happen: held by scenario, never released"


def test_a_hold_before_its_job_is_submitted_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    document = yaml.safe_load((SCENARIOS / "hold.yaml").read_text())
    jobs = [scenario_job("x", 10, 1, queue="batch", tenant="ann")]
    path.write_text(yaml.safe_dump({**document, "jobs": jobs, "actions": [{"at": 5, "hold": "x"}]}))
    with pytest.raises(ValueError, match=r"actions\[0\].hold: at 5s is before job 'x' is submitted \(10s\)"):
        load_scenario(path)
    path.write_text(yaml.safe_dump({**document, "jobs": jobs, "actions": [{"at": 5, "release": "y"}]}))
    with pytest.raises(ValueError, match=r"actions\[0\].release: no job 'y' in the scenario"):
        load_scenario(path)
