"""A cancel of a running job through ``fedq simulate`` (issue 32, observation 6): its stop order reaches
the simulated member at once, as production's reply to the agent's next report does, so the job's end
and what waits on it happen at the cancel's instant, not at the next unrelated event."""

from __future__ import annotations

from pathlib import Path

import yaml
from sim_cli import fedq, jobs_csv, scenario_job, starts


def test_the_dependant_of_a_cancelled_running_job_starts_at_the_cancel(tmp_path: Path) -> None:
    # One one-cpu node. a runs from 0 (runtime 100); b waits on a's end (afterany) and needs its cpu.
    # At 10 the cancel asks a's cluster to stop it: the stop order is in the reply the member takes at
    # that instant (production: the cancel key is read into the reply to the agent's next report), the
    # agent kills a's task and reports a Cancelled at 10; a's end frees b, which the next cycle at 10
    # dispatches and the member launches: b runs 10 -> 15. Nothing else happens after 10, so a
    # simulator that waits for a later event to see a's end never starts b.
    document = {
        "clusters": [{"name": "east", "nodes": [{"count": 1, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "jobs": [
            scenario_job("a", 0, 100),
            scenario_job("b", 0, 5, dependsOn=[{"job": "a", "condition": "afterany"}]),
        ],
        "actions": [{"at": 10, "cancel": "a"}],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document))
    assert fedq("simulate", str(path), "--output-dir", str(tmp_path / "out"), "-o", "json") == 0
    rows = jobs_csv(tmp_path / "out")
    assert starts(rows) == {"a": 0.0, "b": 10.0}
    assert {job: (row["state"], row["end"]) for job, row in rows.items()} == {
        "a": ("Cancelled", "10.000"),
        "b": ("Succeeded", "15.000"),
    }
