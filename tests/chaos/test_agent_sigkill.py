"""A real ``fedq agent`` process SIGKILLed while its jobs run (issue 22, acceptance 1): the federation
requeues them after ``requeueAfter`` to another cluster; no run of a job overlaps another (the killed
agent's simulated runs died with its process, and each of its jobs was launched there once, by its own
log; the other agent's own records start after the kill), and every job ends in exactly one terminal
state."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.chaos.live_agent import LiveAgent
from tests.chaos.runs import FENCING, TERMINAL, running_on
from tests.e2e.cluster import Federation, job

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

JOBS = 4


def test_a_sigkilled_agent_s_jobs_run_again_elsewhere_once_and_never_alongside(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    fed = Federation(etcd_server.connection, tmp_path, FENCING)
    west: LiveAgent | None = None
    try:
        east = fed.join("east", "simulated")  # two nodes of 4 cpus, in its own process
        ids = [fed.submit(job(f"k{i}", runtime="6s", walltime="1m")) for i in range(JOBS)]
        wait_until(lambda: all(running_on(fed, j, "east") for j in ids), 60, "every job to run on east")
        west = LiveAgent(fed.admin, "west", fed.server.url, fed.ca)
        fed.wait_ready("west")

        east.kill()
        killed_at = time.time()
        wait_until(lambda: all(running_on(fed, j, "west") for j in ids), 30, "the requeued jobs to run on west")
        finished = {job_id: fed.wait_state(job_id, TERMINAL, timeout=30) for job_id in ids}

        for record in finished.values():
            assert (record["state"], record["epoch"]) == ("Succeeded", 2), record
            assert sum(e["to"] in TERMINAL for e in record["events"]) == 1, record["events"]
        launched = [line for line in east.log(200_000).splitlines() if "launched" in line]
        assert all(sum(j in line for line in launched) == 1 for j in ids), launched  # once each, on east
        runs = west.backend.records()
        assert {r.job_id for r in runs} == set(ids) and all(r.epoch == 2 for r in runs)
        assert min(r.start for r in runs) > killed_at, "a job ran on west while east still held it"
    finally:
        if west is not None:
            west.close()
        fed.close()
