"""Issue 26 acceptance 3: ``fedq simulate`` and the production scheduler give every job the same history.

configs/scenarios/lifecycle.yaml has a reclaim (a preemption), a cancel of a running job, a cluster
that goes silent and a cancel asked while it is silent. It runs once through ``fedq simulate``
(events.csv) and once on the server's parts on real etcd (``SchedulerService``, ``ClusterService``,
real agents on simulated backends, a manual clock: ``tests.conformance.production``); each job's
history (time, from, to, reason, cluster, epoch) must be the same, event by event.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from tests.conformance.production import play
from tests.scheduler.conftest import HarnessFactory
from tests.simulator.sim_cli import SCENARIOS, fedq

pytestmark = pytest.mark.etcd

History = list[tuple[str, str, str, str, str, str]]


def simulated(out: Path) -> dict[str, History]:
    assert fedq("simulate", str(SCENARIOS / "lifecycle.yaml"), "--output-dir", str(out), "-o", "json") == 0
    histories: dict[str, History] = {}
    with (out / "events.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            entry = (row["time"], row["from"], row["to"], row["reason"], row["cluster"], row["epoch"])
            histories.setdefault(row["id"], []).append(entry)
    return histories


async def test_the_simulator_and_production_give_each_job_the_same_history(
    tmp_path: Path, make_harness: HarnessFactory
) -> None:
    sim = simulated(tmp_path)
    case = yaml.safe_load((SCENARIOS / "lifecycle.yaml").read_text())
    played = await play(make_harness, case, until=1200)
    prod = {
        job: [
            (f"{e.time:.3f}", e.source.value if e.source else "", e.target.value, e.reason, e.cluster, str(e.epoch))
            for e in events
        ]
        for job, events in (await played.events()).items()
    }
    assert prod == sim
    # The scenario does exercise every path it claims to.
    reasons = {reason for history in sim.values() for _, _, _, reason, _, _ in history}
    assert any(r.startswith("preempted:") for r in reasons)
    assert "requeued: cluster west lost" in reasons
    assert "cancel requested by scenario" in reasons
    assert "cancelled: cluster west was lost before it confirmed the cancel" in reasons
