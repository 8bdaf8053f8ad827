"""Two server replicas on one etcd (https, a throwaway CA); the leader is SIGKILLed while it dispatches
(issue 22, acceptance 1). From the agent's own launch and stop records no job ran twice or two runs
overlapped; every job was dispatched once and ends in exactly one terminal state."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from federation.client import FedqClient
from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.chaos.live_agent import LiveAgent
from tests.chaos.runs import TERMINAL, assert_no_overlap
from tests.e2e.cluster import job, leader_of, replicas
from tests.e2e.support import ADMIN_TOKEN

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

JOBS = 60  # one-cpu jobs of 1 s on 8 cpus: dispatch goes on in waves for ~8 s


def test_killing_the_leader_mid_dispatch_runs_no_job_twice(etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = {"cyclePeriod": "100ms", "cluster": {"lostAfter": "30s", "requeueAfter": "60s"}}
    servers, ca = replicas(etcd_server.connection, tmp_path, config)
    agent: LiveAgent | None = None
    try:
        for server in servers:
            server.start()
        first = wait_until(lambda: leader_of(servers, ca), 30, "a leader")
        assert first is not None
        survivor = next(s for s in servers if s is not first)
        with FedqClient(survivor.url, ADMIN_TOKEN, ca=ca) as admin:
            agent = LiveAgent(admin, "big", survivor.url, ca, cpus=8)  # it reports to the survivor
            wait_until(lambda: admin.request("GET", "/v1/clusters")["items"][0]["state"] == "Ready", 30, "Ready")
            ids = set(admin.submit_many([job("burst", runtime="1s", walltime="1m")] * JOBS, tenant="alice"))
            wait_until(lambda: sum(1 for _ in admin.jobs(state="Succeeded")) >= 12, 60, "the first waves to end")
            first.kill()
            assert sum(1 for _ in admin.jobs(state="Succeeded")) < JOBS // 2, "the burst was over before the kill"
            wait_until(lambda: leader_of([survivor], ca), 30, "the survivor to lead")
            wait_until(lambda: all(j["state"] in TERMINAL for j in admin.jobs()), 120, "every job to end")
            for job_id in ids:
                record = admin.job(job_id)
                events = [e["to"] for e in record["events"]]
                assert record["state"] == "Succeeded" and record["epoch"] == 1, record
                assert events.count("Dispatched") == 1 and sum(e in TERMINAL for e in events) == 1, events
        runs = agent.backend.records()
        assert sorted(r.job_id for r in runs) == sorted(ids), "a job was launched twice, or never"
        assert_no_overlap(runs, time.time())
    finally:
        if agent is not None:
            agent.close()
        for server in servers:
            server.stop()
