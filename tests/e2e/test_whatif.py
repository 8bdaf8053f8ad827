"""``fedq whatif`` on a live federation's own history (issue 37, acceptance 1).

The live federation runs on the system clock (its server and agents have no clock to accelerate), so
the test submits a compact generated "week" scaled down in time: seven 3 s "days" (and a half-life of
one such day), each with a burst of alice's jobs (research.vision) that fills a simulated cluster of 4
CPUs, then carol's (research.nlp) and alice's again, which wait for the same CPUs. ``fedq whatif`` then
replays it: with the same config the baseline must start jobs within one scheduling interval
(``cyclePeriod``, 1 s) of the recorded starts at the median, and with research.vision's weight doubled
its mean wait must fall.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.store import EtcdServer
from tests.e2e.cluster import Federation, job
from tests.e2e.support import ADMIN_TOKEN, REPO, cli

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

CYCLE = 1.0
DAYS, DAY = 7, 3.0
RUNTIME = 0.8
BURSTS = (  # (seconds into the day, tenant, queue, jobs): ten one-CPU jobs of 0.8 s a day on 4 CPUs
    (0.0, "alice", "research.vision", 4),  # fills the cluster
    (0.25, "carol", "research.nlp", 3),  # then both queues wait for the same 4 CPUs
    (0.4, "alice", "research.vision", 3),
)


def _week(fed: Federation) -> list[str]:
    """Submit the week's bursts at their times (the trace's own arrival times: nothing to wait for)."""
    ids: list[str] = []
    begin = time.monotonic()
    for day in range(DAYS):
        for offset, tenant, queue, count in BURSTS:
            time.sleep(max(0.0, begin + day * DAY + offset - time.monotonic()))
            specs = []
            for n in range(count):
                spec = job(f"d{day}-{tenant}-{int(offset * 100)}-{n}", cpu="1", runtime=f"{RUNTIME:g}s", walltime="1m")
                spec["spec"]["queue"] = queue
                specs.append(spec)
            ids += fed.admin.submit_many(specs, tenant=tenant)
    return ids


def _whatif(fed: Federation, *args: str) -> dict[str, Any]:
    result = cli("whatif", *args, "--ca", fed.ca, "-o", "json", token=ADMIN_TOKEN, server=fed.server.url)
    return dict(json.loads(result.stdout))


def test_whatif_reproduces_the_week_and_shows_a_doubled_weight(etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = {
        "cyclePeriod": f"{CYCLE:g}s",
        "fairshare": {"halfLife": f"{DAY:g}s"},  # a day's half-life, scaled as the days are
        "cluster": {"lostAfter": "3s", "requeueAfter": "6s"},
    }
    fed = Federation(etcd_server.connection, tmp_path, config)
    try:
        agent = tmp_path / "east.yaml"
        agent.write_text(yaml.safe_dump({"simulated": {"nodes": [{"count": 1, "resources": {"cpu": 4}}]}}))
        fed.join("east", "simulated", "--config", str(agent), "--report-interval", "100ms")
        ids = _week(fed)
        for job_id in ids:
            assert fed.wait_state(job_id, {"Succeeded", "Failed", "Cancelled"})["state"] == "Succeeded"

        export = tmp_path / "week.yaml"
        cli(
            "simulate",
            "--export-history",
            str(export),
            "--since",
            "10m",
            "--ca",
            fed.ca,
            token=ADMIN_TOKEN,
            server=fed.server.url,
        )
        same = _whatif(fed, "--since", "10m")
        queues = yaml.safe_load((REPO / "configs" / "queues.yaml").read_text())
        vision = next(q for q in queues["queues"][0]["children"] if q["name"] == "vision")
        vision["weight"] *= 2
        candidate = tmp_path / "queues.yaml"
        candidate.write_text(yaml.safe_dump(queues))
        doubled = _whatif(fed, "--from", str(export), "--queues", str(candidate))
    finally:
        fed.close()

    fidelity = same["fidelity"]
    waits = {q: same["queues"][q]["baseline"]["mean_wait"] for q in same["queues"]}
    change = doubled["queues"]["research.vision"]
    print(f"jobs {same['window']['jobs']}; baseline start error {fidelity}; baseline mean waits {waits}")
    print(
        f"vision mean wait {change['baseline']['mean_wait']:.3f} -> {change['candidate']['mean_wait']:.3f} s; "
        f"nlp {doubled['queues']['research.nlp']['change']}"
    )
    assert same["window"]["jobs"] == len(ids) == DAYS * sum(b[3] for b in BURSTS)
    assert fidelity["compared"] == len(ids), fidelity
    assert fidelity["median"] < CYCLE, f"median start error {fidelity['median']:.3f} s is not under {CYCLE} s"
    # No change: the candidate is the baseline, number for number.
    assert all(v == 0 for group in same["queues"].values() for v in group["change"].values() if v is not None)
    assert doubled["fidelity"]["compared"] == fidelity["compared"]  # the export file holds the same week
    assert change["change"]["mean_wait"] < 0, change
    assert change["candidate"]["fair_share"] > change["baseline"]["fair_share"], change
