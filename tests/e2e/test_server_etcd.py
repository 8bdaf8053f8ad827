"""Submit, list, get and cancel through the real CLI against a real server on real etcd, and lose
nothing acknowledged when both are stopped and started again on the same data dir."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from federation.launcher import ServerProcess, wait_until
from federation.store import EtcdServer
from policies.clock import SystemClock
from tests.e2e.support import ADMIN_TOKEN, REPO, cli, cli_json

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

ADMIN_ENV = {"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}


def test_cli_round_trip_and_restart_keeps_acknowledged_jobs(tmp_path: Path) -> None:
    etcd = EtcdServer(tmp_path / "etcd-data", clock=SystemClock())
    etcd.start()
    try:
        queues = str(REPO / "configs" / "queues.yaml")
        with ServerProcess(etcd.connection, tmp_path / "server.log", ["--queues", queues], env=ADMIN_ENV) as server:
            alice = cli_json("token", "create", "--tenant", "alice", token=ADMIN_TOKEN, server=server.url)["token"]
            hello = cli_json(
                "submit", str(REPO / "configs" / "examples" / "hello.yaml"), token=alice, server=server.url
            )
            assert set(hello) == {"id"}  # one job: the shape FedqClient.submit answers
            first = hello["id"]
            job = cli_json("job", first, token=alice, server=server.url)
            assert (job["name"], job["tenant"], job["state"]) == ("hello", "alice", "Pending")

            many = tmp_path / "many.yaml"
            many.write_text(
                "\n---\n".join(
                    f"metadata: {{name: batch-{i}}}\n"
                    "spec: {queue: research.vision, tasks: [{resources: {cpu: 1}}]}"
                    for i in range(5)
                )
            )
            acknowledged = [first, *cli_json("submit", str(many), token=alice, server=server.url)["ids"]]
            cancelled = acknowledged[1]
            assert cli_json("cancel", cancelled, token=alice, server=server.url)["state"] == "Cancelled"

            table = cli("jobs", token=alice, server=server.url).stdout
            assert first in table and "hello" in table

            def scraped() -> str | None:  # the scheduler's metrics share the API's /metrics (behind a token)
                text = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {alice}"}, timeout=10).text
                return text if "fedq_scheduler_leader 1.0" in text else None

            assert "fedq_scheduler_cycle_seconds_count" in wait_until(scraped, 30, "the scheduler's metrics")

            bob = cli_json("token", "create", "--tenant", "bob", token=ADMIN_TOKEN, server=server.url)["token"]
            refused = cli("cancel", first, token=bob, server=server.url, check=False)
            assert refused.returncode == 1
            assert "belongs to another tenant" in refused.stderr

        etcd.stop()
        etcd.start()
        with ServerProcess(etcd.connection, tmp_path / "server2.log", env=ADMIN_ENV) as server:
            listed = {
                item["id"]: item["state"] for item in cli_json("jobs", "--all", token=alice, server=server.url)["items"]
            }
            assert set(listed) == set(acknowledged)
            assert listed[cancelled] == "Cancelled"
            assert all(state == "Pending" for job_id, state in listed.items() if job_id != cancelled)
            assert cli_json("queues", token=alice, server=server.url)["queues"], "queue tree lost across restart"
    finally:
        etcd.stop()
