"""The quota report against a real server on real etcd with agents running jobs, in all three formats
(issue 7 acceptance 2)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import ADMIN_TOKEN, cli

pytestmark = [pytest.mark.etcd, pytest.mark.slow]


def test_quota_report_in_table_json_and_csv(etcd_server: EtcdServer, tmp_path: Path) -> None:
    fed = Federation(etcd_server.endpoint, tmp_path, {**FAST, "accountingSaveEvery": "200ms"})
    try:
        fed.join("east", "simulated", "--labels", "region=eu")
        fed.join("west", "simulated", "--labels", "region=us")
        ids = [
            fed.submit(job(f"a{i}", cpu="2", runtime="2s", selector={"region": "eu"}), tenant="alice") for i in range(3)
        ]
        ids += [
            fed.submit(job(f"b{i}", cpu="1", runtime="2s", selector={"region": "us"}), tenant="bob") for i in range(2)
        ]
        for job_id in ids:
            assert fed.wait_state(job_id, {"Succeeded", "Failed"})["state"] == "Succeeded"
        server = fed.server.url

        def report(*args: str) -> str:
            return cli("report", "quota", "--since", "1h", *args, token=ADMIN_TOKEN, server=server).stdout

        def used(doc: dict, tenant: str) -> float:
            row = next(r for r in doc["tenants"] if r["tenant"] == tenant)
            return float(row["resource_hours"].get("cpu", 0.0))

        # alice ran 3 x 2 cpus x 2 s = 12 cpu-seconds, bob 2 x 1 x 2 s = 4 (accounting is saved every 200 ms)
        wait_until(lambda: used(json.loads(report("--output", "json")), "bob") > 0, 30, "usage to be saved")
        doc = json.loads(report("--output", "json"))
        assert used(doc, "alice") * 3600 == pytest.approx(12, abs=1.5)
        assert used(doc, "bob") * 3600 == pytest.approx(4, abs=1.5)
        assert {r["tenant"]: r["completed"] for r in doc["tenants"] if r["tenant"] in ("alice", "bob")} == {
            "alice": 3,
            "bob": 2,
        }

        rows = list(csv.DictReader(io.StringIO(report("--output", "csv"))))
        assert sorted(r["tenant"] for r in rows if r["tenant"] in ("alice", "bob")) == ["alice", "bob"]
        by_cluster = list(csv.DictReader(io.StringIO(report("--output", "csv", "--by", "cluster"))))
        pairs = {(r["tenant"], r["cluster"]) for r in by_cluster if r["tenant"] in ("alice", "bob")}
        assert {("alice", "east"), ("bob", "west")} <= pairs

        table = report()
        assert "alice" in table and "bob" in table
        bob_token = fed.admin.create_tenant_token("bob")
        refused = cli("report", "quota", "--tenant", "alice", token=bob_token, server=server, check=False)
        assert refused.returncode == 1 and "403" in refused.stderr
    finally:
        fed.close()
