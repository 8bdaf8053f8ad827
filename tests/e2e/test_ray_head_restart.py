"""The agent survives its Ray head restarting (issue 27, acceptance 2): a job runs on a head of the
test's own; the head's session is SIGKILLed, which ends the run (its runner's watchdog kills the
command once the worker is gone); a new head starts on the same address; the agent, whose Ray
driver died with the old cluster, connects again, finds the run gone and hands the job back; it runs
once more on the new head and succeeds. Two runs, never at once: the first run's process is dead
before the new head exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.ray_head import ENV, RayHead
from tests.e2e.support import alive, runs_recorded

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]
CONFIG = {**FAST, "cluster": {"lostAfter": "120s", "requeueAfter": "240s"}}  # the cluster itself is never lost


def test_the_agent_outlives_a_ray_head_restart_and_reruns_what_was_lost_once(
    etcd_server: EtcdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)  # for the agent, which connects to this head
    head = RayHead()
    head.start()
    (tmp_path / "fed").mkdir()
    fed = Federation(etcd_server.connection, tmp_path / "fed", CONFIG)
    try:
        fed.join("ray-h", "ray", "--ray-address", head.address)
        runs = tmp_path / "runs"
        job_id = fed.submit(job("survivor", command=runs_recorded(runs, 300)))
        first = fed.wait_state(job_id, {"Running"})
        pid = int(wait_until(lambda: runs.exists() and runs.read_text().split()[0], 30, "the first run's pid"))
        head.kill()
        wait_until(lambda: not alive(pid), 30, f"the first run's process {pid} to end with its head")
        head.start()
        done = fed.wait_state(job_id, {"Succeeded", "Failed", "Cancelled"}, timeout=180)
        assert done["state"] == "Succeeded", done
        assert len(runs.read_text().split()) == 2  # the lost run and exactly one more
        assert (done["epoch"], done["retries"]) == (first["epoch"] + 1, 0)  # handed back: not a retry
        reasons = [event["reason"] for event in done["events"]]
        assert any("lost this run while its backend was away" in reason for reason in reasons), reasons
        assert fed.agents["ray-h"].alive
    finally:
        fed.close()
        head.close()
