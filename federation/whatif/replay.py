"""Replay an export twice, as recorded (the baseline) and with the candidate's changes, and compare.

Both runs are ``fedq simulate``'s (``run_scenario``: the production turn on a virtual clock), so
the difference between them is the candidate's alone; the baseline's distance from what really
happened (its start errors) says how far to trust that difference.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from federation.config import FederationConfig
from federation.models import QueueTree
from federation.simulator.entitlement import fair_shares
from federation.simulator.run import run_scenario, with_policy
from federation.simulator.scenario import Scenario, ScenarioFile
from federation.whatif.compare import Replay, compare, fidelity, preempted_jobs
from federation.whatif.history import History, policy_of


@dataclass(frozen=True, slots=True)
class Changes:
    """What the candidate changes: the federation config, the queue tree, the clusters, the policy."""

    config: FederationConfig | None = None
    queues: list[dict[str, Any]] | None = None
    clusters: list[dict[str, Any]] | None = None
    policy: str | None = None

    def describe(self) -> list[str]:
        named = (("config", self.config), ("queues", self.queues), ("clusters", self.clusters), ("policy", self.policy))
        return [name for name, value in named if value is not None]


def load(document: Any, what: str) -> tuple[Scenario, History]:
    """The export's scenario and its ``history`` block; a ValueError names ``what`` and the field."""
    if not isinstance(document, dict) or not isinstance(document.get("history"), dict):
        raise ValueError(f"{what}: not a history export (fedq simulate --export-history writes one)")
    try:
        return ScenarioFile.model_validate(document).build(), History.model_validate(document["history"])
    except (ValidationError, ValueError) as exc:
        raise ValueError(f"{what}: {exc}") from None


def candidate_of(document: dict[str, Any], changes: Changes) -> dict[str, Any]:
    """The export with the candidate's config, queues and clusters in place of the recorded ones."""
    out = copy.copy(document)
    if changes.config is not None:
        out["policy"] = policy_of(changes.config)
    if changes.queues is not None:
        out["queues"] = changes.queues
    if changes.clusters is not None:
        out["clusters"] = changes.clusters
    return out


WHATIF_JSON = "whatif.json"


def replay(scenario: Scenario, output_dir: Path, *, plot: bool = False) -> Replay:
    run = run_scenario(scenario, output_dir, plot=plot)
    tree = QueueTree(scenario.queues)
    accepted = [r for r in run.result.records if r.state != "Rejected"]
    return Replay(
        records=run.result.records,
        capacity=run.result.capacity,
        tenant_shares=fair_shares(tree, ((r.tenant, r.queue) for r in accepted)),
        queue_shares=fair_shares(tree, ((r.queue, r.queue) for r in accepted)),  # a leaf's share, whole
        preempted=preempted_jobs(run.result.events),
        utilization=run.metrics["utilization"],
    )


def whatif(document: dict[str, Any], changes: Changes, output_dir: Path, *, plot: bool = False) -> dict[str, Any]:
    """Both replays (into ``output_dir``/baseline and /candidate) and what ``fedq whatif`` prints."""
    baseline_scenario, history = load(document, "the export")
    candidate_scenario, _ = load(candidate_of(document, changes), "the candidate")
    if changes.policy is not None:
        candidate_scenario.policy = with_policy(candidate_scenario.policy, changes.policy)
    baseline = replay(baseline_scenario, output_dir / "baseline", plot=plot)
    candidate = replay(candidate_scenario, output_dir / "candidate", plot=plot)
    notes: dict[str, int] = {}
    for job in history.jobs.values():
        notes[job.note] = notes.get(job.note, 0) + 1
    result = {
        "window": {
            "since": history.since,
            "until": history.until,
            "jobs": len(baseline_scenario.jobs),
            "runtimes": notes,
            "left_out": history.left_out,
            "dropped_dependencies": history.dropped_dependencies,
        },
        "changes": changes.describe(),
        "cycle_period": baseline_scenario.policy.cycle_period,
        "fidelity": asdict(fidelity(baseline.records, {job: r.start for job, r in history.jobs.items()})),
        **compare(baseline, candidate),
        "files": {"baseline": str(output_dir / "baseline"), "candidate": str(output_dir / "candidate")},
    }
    # Beside the two runs, for the dashboard's Simulator view (which opens the directory).
    (output_dir / WHATIF_JSON).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result
