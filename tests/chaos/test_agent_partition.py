"""An agent cut off from the federation by a TCP proxy for longer than ``requeueAfter`` (issue 22,
acceptance 1): it fences its runs at its lease (``lostAfter``), the federation requeues them to another
cluster, and from the agents' own launch and stop records no two runs of one job overlap; every job ends
in exactly one terminal state, and one whose cancel was asked during the cut ends Cancelled.

A real server (https, real etcd) and two real agents in threads of the test, on recording simulated
backends and the system clock: east reports through the proxy, west directly and joins once east runs
everything."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.chaos.conftest import ProxyFactory
from tests.chaos.live_agent import LiveAgent
from tests.chaos.runs import FENCING, TERMINAL, assert_no_overlap, running_on
from tests.e2e.cluster import Federation, job

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

JOBS = 4


def test_a_partitioned_agent_fences_its_runs_before_they_run_again_elsewhere(
    etcd_server: EtcdServer, tmp_path: Path, tcp_proxy: ProxyFactory
) -> None:
    fed = Federation(etcd_server.connection, tmp_path, FENCING)
    agents: list[LiveAgent] = []
    try:
        proxy = tcp_proxy("127.0.0.1", urlsplit(fed.server.url).port or 443)
        east = LiveAgent(fed.admin, "east", f"https://127.0.0.1:{proxy.port}", fed.ca)
        agents.append(east)
        ids = [fed.submit(job(f"p{i}", runtime="6s", walltime="1m")) for i in range(JOBS)]
        for job_id in ids:
            assert fed.wait_state(job_id, {"Running"})["cluster"] == "east"
        agents.append(LiveAgent(fed.admin, "west", fed.server.url, fed.ca))
        fed.wait_ready("west")

        proxy.cut()
        cut_at = time.time()
        fed.admin.cancel(ids[0])  # east never hears of it
        wait_until(lambda: east.agent.fenced, 10, "east to fence its runs", interval=0.05)
        fenced_after = time.time() - cut_at
        wait_until(lambda: all(running_on(fed, j, "west") for j in ids[1:]), 30, "the requeued jobs to run on west")
        assert time.time() - cut_at > 4.0  # cut for longer than requeueAfter
        proxy.restore()
        wait_until(lambda: not east.agent.fenced, 10, "east to be heard again")

        finished = {job_id: fed.wait_state(job_id, TERMINAL, timeout=30) for job_id in ids}
        assert finished[ids[0]]["state"] == "Cancelled"
        assert all(finished[j]["state"] == "Succeeded" and finished[j]["epoch"] == 2 for j in ids[1:])
        for record in finished.values():
            assert sum(e["to"] in TERMINAL for e in record["events"]) == 1, record["events"]
        runs = [run for agent in agents for run in agent.backend.records()]
        assert_no_overlap(runs, time.time())
        assert {(r.cluster, r.epoch) for r in runs if r.job_id == ids[1]} == {("east", 1), ("west", 2)}
        assert fenced_after < 4.0, "east fenced only after the federation requeued its runs"
    finally:
        for agent in agents:
            agent.close()
        fed.close()
