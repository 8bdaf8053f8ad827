"""Two server replicas on one etcd: the leader is SIGKILLed during a dispatch burst; the other takes
over; every job ends up in exactly one state, dispatched exactly once, none lost (issue 5 acc. 2)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

from federation.client import FedqClient
from federation.launcher import FedqProcess, ServerProcess, wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import leader_of
from tests.e2e.support import ADMIN_TOKEN, REPO

pytestmark = [pytest.mark.etcd, pytest.mark.slow]
JOBS = 1000


def test_killing_the_leader_mid_dispatch_loses_and_doubles_nothing(etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = tmp_path / "federation.yaml"
    config.write_text(yaml.safe_dump({"cyclePeriod": "100ms", "cluster": {"lostAfter": "30s", "requeueAfter": "60s"}}))
    prefix = f"/e2e-{uuid.uuid4().hex}/"
    env = {"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}
    common = ["--queues", str(REPO / "configs" / "queues.yaml"), "--config", str(config), "--prefix", prefix]
    servers = [ServerProcess(etcd_server.connection, tmp_path / f"server{i}.log", common, env=env) for i in range(2)]
    agent: FedqProcess | None = None
    try:
        for server in servers:
            server.start()
        first = wait_until(lambda: leader_of(servers), 30, "a leader")
        survivor = next(s for s in servers if s is not first)
        with FedqClient(first.url, ADMIN_TOKEN) as admin:
            agent_config = tmp_path / "agent.yaml"
            agent_config.write_text(
                yaml.safe_dump(
                    {
                        "name": "big",
                        "backend": "simulated",
                        "reportInterval": "200ms",
                        "simulated": {"nodes": [{"count": 25, "resources": {"cpu": 8}}]},
                    }
                )
            )
            token = admin.create_join_token("big")  # the agent reports to the replica that survives
            agent = FedqProcess(
                [
                    "agent",
                    "join",
                    "--server",
                    survivor.url,
                    "--token",
                    token,
                    "--config",
                    str(agent_config),
                    "--credential-file",
                    str(tmp_path / "big.json"),
                ],
                tmp_path / "agent.log",
            ).start()
            wait_until(
                lambda: any(c["state"] == "Ready" for c in admin.request("GET", "/v1/clusters")["items"]),
                60,
                "the agent to be Ready",
            )
            spec = {
                "metadata": {"name": "burst"},
                "spec": {"queue": "scratch.default", "tasks": [{"resources": {"cpu": 1}, "runtime": "2s"}]},
            }
            submitted = set(admin.submit_many([spec] * JOBS, tenant="alice"))

            # 200 cpus for 1000 two-second jobs: dispatch goes on in waves for ~10 s; kill the leader
            # once the first waves are done and most jobs still wait.
            def finished() -> int:
                return sum(1 for job in admin.jobs(state="Succeeded"))

            wait_until(lambda: finished() >= 200, 60, "the first waves to finish")
            first.kill()
        with FedqClient(survivor.url, ADMIN_TOKEN) as admin:
            assert sum(1 for _ in admin.jobs(state="Succeeded")) < JOBS // 2, "the burst was over before the kill"
            wait_until(lambda: leader_of([survivor]), 30, "the surviving replica to lead")
            wait_until(lambda: all(job["state"] == "Succeeded" for job in admin.jobs()), 180, "every job to finish")
            listed = list(admin.jobs())
            ids = Counter(job["id"] for job in listed)
            assert set(ids) == submitted, "a job was lost or invented"
            assert max(ids.values()) == 1, "a job is listed in two states"
            for job_id in sorted(submitted)[:: max(1, JOBS // 150)]:
                events = [e["to"] for e in admin.job(job_id)["events"]]
                assert events.count("Dispatched") == 1 and events.count("Succeeded") == 1, events
                assert admin.job(job_id)["epoch"] == 1
    finally:
        if agent is not None:
            agent.stop()
        for server in servers:
            server.stop()
