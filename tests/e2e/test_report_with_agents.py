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
    fed = Federation(etcd_server.connection, tmp_path, {**FAST, "accountingSaveEvery": "200ms"})
    try:
        fed.join("east", "simulated", "--labels", "region=eu")
        fed.join("west", "simulated", "--labels", "region=us")
        ids = [
            fed.submit(job(f"a{i}", cpu="2", runtime="5s", selector={"region": "eu"}), tenant="alice") for i in range(3)
        ]
        ids += [
            fed.submit(job(f"b{i}", cpu="1", runtime="5s", selector={"region": "us"}), tenant="bob") for i in range(2)
        ]
        ran = {"alice": 0.0, "bob": 0.0}  # cpu-seconds, from the start and end times the agents reported
        for job_id, (tenant, cpus) in zip(ids, [("alice", 2)] * 3 + [("bob", 1)] * 2, strict=True):
            record = fed.wait_state(job_id, {"Succeeded", "Failed"})
            assert record["state"] == "Succeeded"
            ran[tenant] += cpus * (record["end_time"] - record["start_time"])
        assert ran["alice"] == pytest.approx(30, abs=3) and ran["bob"] == pytest.approx(10, abs=1)
        server = fed.server.url

        # History is kept in one-minute buckets and a window that cuts a bucket takes its share of it, so
        # the window runs to a whole minute past now to count every second of these jobs.
        until = str((int(time.time()) // 60 + 2) * 60)

        def report(*args: str) -> str:
            window = ("--since", "1h", "--until", until)
            return cli("report", "quota", *window, *args, "--ca", fed.ca, token=ADMIN_TOKEN, server=server).stdout

        def used(doc: dict, tenant: str) -> float:
            row = next(r for r in doc["tenants"] if r["tenant"] == tenant)
            return float(row["resource_hours"].get("cpu", 0.0))

        # alice ran 3 jobs of 2 cpus for about 5 s, bob 2 of 1. The report reads what the leader last
        # saved (every 200 ms here), so it catches up with the finished jobs shortly after, to the exact
        # times the records hold: a start or an end that reaches the accountant after a later event or
        # save is backdated to its time (docs/reports.md).
        def settled() -> dict | None:
            doc = json.loads(report("--output", "json"))
            seconds = {tenant: used(doc, tenant) * 3600 for tenant in ran}
            return doc if all(abs(seconds[t] - ran[t]) <= 1e-6 for t in ran) else None

        doc = wait_until(settled, 30, f"the saved usage to reach the jobs' cpu-seconds {ran}")
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
        # Issue 36: usage in plain hours (it read 'cpu=8.333m', resource-hours with SI prefixes), and a
        # fair share that stays with a tenant between jobs (both read 0.0% once their jobs had ended).
        wide = report("-o", "wide")
        lines = {line.split()[0]: line for line in wide.splitlines()[2:] if line.strip()}
        print(f"\n{wide}")
        for tenant in ("alice", "bob"):
            assert "cpu-h" in lines[tenant] and "cpu=" not in lines[tenant].split("%")[-1], lines[tenant]
        shares = {r["tenant"]: r["fair_share"] for r in doc["tenants"]}
        assert shares["alice"] > 0 and shares["bob"] > 0, f"fair shares after every job ended: {shares}"
        bob_token = fed.admin.create_tenant_token("bob")
        refused = cli(
            "report", "quota", "--tenant", "alice", "--ca", fed.ca, token=bob_token, server=server, check=False
        )
        assert refused.returncode == 1 and "403" in refused.stderr
    finally:
        fed.close()
