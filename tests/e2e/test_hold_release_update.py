"""Hold, release and update end to end (issue 23, acceptance 1): a server on real etcd with a simulated
agent whose cluster runs one job at a time (each job's gang is the whole cluster, 2 nodes of 4 CPUs).

While ``busy`` runs, alice submits ``high`` (priority 10) held, then ``low1`` and ``low2`` (priority
0, in that order) and raises ``low2`` to priority 5 through ``fedq update``. So when ``busy`` ends,
``low2`` runs first (the update changed the order), ``high`` stays out though it outranks both (held),
and once released while ``low2`` runs, ``high`` starts next, ahead of ``low1``. Start order: busy,
low2, high, low1. Then, in bulk through the CLI, an array submitted held is cancelled whole, and a
release of it is refused for each element (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import cli

pytestmark = [pytest.mark.etcd, pytest.mark.slow]
ENDED = {"Succeeded", "Failed", "Cancelled"}


def whole_cluster(name: str, runtime: str, priority: int = 0) -> dict[str, Any]:
    spec = job(name, replicas=2, cpu="4", runtime=runtime)
    spec["spec"]["priority"] = priority
    return spec


def test_a_held_job_waits_while_lower_ones_run_and_an_update_reorders(etcd_server: EtcdServer, tmp_path: Path) -> None:
    fed = Federation(etcd_server.connection, tmp_path, FAST)
    try:
        fed.join("east", "simulated")
        alice = fed.admin.new_token("tenant", "alice")["token"]

        def fedq(*args: str) -> Any:
            done = cli(*args, "--ca", fed.ca, "-o", "json", token=alice, server=fed.server.url)
            return json.loads(done.stdout)

        busy = fed.submit(whole_cluster("busy", "6s"))
        fed.wait_state(busy, {"Running"})
        spec = tmp_path / "high.json"
        spec.write_text(json.dumps(whole_cluster("high", "2s", priority=10)))
        high = fedq("submit", str(spec), "--hold")["id"]  # one job: {"id"}, as FedqClient.submit answers
        low1 = fed.submit(whole_cluster("low1", "1s"))
        low2 = fed.submit(whole_cluster("low2", "3s"))
        updated = fedq("update", low2, "--priority", "5")
        assert updated["reason"] == "updated by tenant/alice: priority 0 -> 5"
        assert fed.admin.job(busy)["state"] == "Running"  # all of it decided while busy still runs

        why = fed.admin.request("GET", f"/v1/jobs/{high}/explain")
        assert why["summary"].startswith("held by tenant/alice at ")
        assert why["held"]["by"] == "tenant/alice" and why["projected_start"] is None

        fed.wait_state(low2, {"Running"})
        assert fed.admin.job(high)["state"] == "Pending"  # it outranks low2, but it is held
        assert fedq("release", high)["reason"] == "released by tenant/alice"

        records = {job_id: fed.wait_state(job_id, ENDED) for job_id in (busy, low2, high, low1)}
        assert all(record["state"] == "Succeeded" for record in records.values()), records
        starts = sorted(records, key=lambda job_id: records[job_id]["start_time"])
        assert starts == [busy, low2, high, low1], {job_id: records[job_id]["name"] for job_id in starts}
        history = [(e.get("from"), e["to"], e["reason"]) for e in records[high]["events"]]
        assert history[:3] == [  # nothing moved it while it was held (no reservation, no dispatch)
            (None, "Pending", "submitted"),
            ("Pending", "Pending", "held by tenant/alice"),
            ("Pending", "Pending", "released by tenant/alice"),
        ]
        assert [to for _, to, _ in history[3:]].count("Dispatched") == 1

        # In bulk through the CLI: an array submitted held is cancelled whole; a release then is refused
        # for each element (exit 1), saying why.
        sweep = whole_cluster("sweep", "1s")
        sweep["spec"]["array"] = {"count": 3}
        spec.write_text(json.dumps(sweep))
        base = fedq("submit", str(spec), "--hold")["id"]  # an array: its base id
        cancelled = fedq("cancel", "--array", base)
        assert (cancelled["matched"], cancelled["changed"], cancelled["refused"]) == (3, 3, 0)
        refused = cli(
            "release", "--array", base, "--ca", fed.ca, "-o", "json", token=alice, server=fed.server.url, check=False
        )
        assert refused.returncode == 1
        why = {r["message"] for r in json.loads(refused.stdout)["refusals"]}
        assert why == {"job is Cancelled: no release from there"}
    finally:
        fed.close()
