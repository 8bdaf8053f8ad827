"""``fedq requeue`` of a running job on the Ray backend (issue 23, acceptance 1): its process is killed
through the agent, the job waits again (attempt 1, no retry counted) and runs once more under the next
epoch, exactly once; a real server on real etcd and a real agent process on a local Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import alive, runs_recorded

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]
CONFIG = {**FAST, "cluster": {"lostAfter": "60s", "requeueAfter": "120s"}}  # no test here loses its cluster


def test_requeue_kills_the_run_and_runs_it_again_under_a_new_epoch_once(
    etcd_server: EtcdServer, ray_cluster: str, tmp_path: Path
) -> None:
    (tmp_path / "fed").mkdir()
    fed = Federation(etcd_server.connection, tmp_path / "fed", CONFIG)
    try:
        fed.join("ray-r", "ray", "--ray-address", ray_cluster)
        runs = tmp_path / "runs"
        job_id = fed.submit(job("requeued", command=runs_recorded(runs, 120)))
        first = fed.wait_state(job_id, {"Running"})
        pid = int(wait_until(lambda: runs.exists() and runs.read_text().split()[0], 30, "the first run's pid"))
        asked = fed.admin.act(job_id, "requeue")
        assert (asked["state"], asked["changed"]) == ("Running", True)
        done = fed.wait_state(job_id, {"Succeeded", "Failed", "Cancelled"})
        assert done["state"] == "Succeeded", done
        wait_until(lambda: not alive(pid), 15, f"the first run's process {pid} to be gone")
        assert len(runs.read_text().split()) == 2  # the first run and exactly one more
        assert (done["epoch"], done["attempt"], done["retries"], done["preemptions"]) == (first["epoch"] + 1, 1, 0, 0)
        reasons = [event["reason"] for event in done["events"]]
        assert "requeue requested by admin/bootstrap" in reasons
        assert any(reason.startswith("requeued as requested") for reason in reasons), reasons
    finally:
        fed.close()
