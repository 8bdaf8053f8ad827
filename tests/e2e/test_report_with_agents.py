"""The quota report against a real server on real etcd with agents running jobs, in all three formats
(issue 7 acceptance 2)."""

from __future__ import annotations

import csv
import io
import json
import time
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
            fed.submit(job(f"a{i}", cpu="2", runtime="5s", selector={"region": "eu"}), tenant="alice") for i in range(3)
        ]
        ids += [
            fed.submit(job(f"b{i}", cpu="1", runtime="5s", selector={"region": "us"}), tenant="bob") for i in range(2)
        ]
        for job_id in ids:
            assert fed.wait_state(job_id, {"Succeeded", "Failed"})["state"] == "Succeeded"
        server = fed.server.url

        # History is kept in one-minute buckets and a window that cuts a bucket takes its share of it, so
        # the window runs to a whole minute past now to count every second of these jobs.
        until = str((int(time.time()) // 60 + 2) * 60)

        def report(*args: str) -> str:
            window = ("--since", "1h", "--until", until)
            return cli("report", "quota", *window, *args, token=ADMIN_TOKEN, server=server).stdout

        def used(doc: dict, tenant: str) -> float:
            row = next(r for r in doc["tenants"] if r["tenant"] == tenant)
            return float(row["resource_hours"].get("cpu", 0.0))

        # alice ran 3 x 2 cpus x 5 s = 30 cpu-seconds, bob 2 x 1 x 5 s = 10. The report reads what the
        # leader last saved (every 200 ms here), so it catches up with the finished jobs shortly after.
        # The accountant applies a start or an end that arrives after a later event or save at that
        # later time (docs/reports.md), so each may count up to its report's delay late: about 0.1 s
        # here, and a second or more on a loaded machine. The margins allow 3/8 s per event on average
        # (alice 6 events of 2 cpus, bob 4 of 1) and still tell a job missing or counted twice.
        def settled() -> dict | None:
            doc = json.loads(report("--output", "json"))
            seconds = (used(doc, "alice") * 3600, used(doc, "bob") * 3600)
            return doc if abs(seconds[0] - 30) <= 4.5 and abs(seconds[1] - 10) <= 1.5 else None

        doc = wait_until(settled, 30, "the saved usage to reach 30 and 10 cpu-seconds")
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
