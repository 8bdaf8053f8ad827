"""Agent loss: Unreachable after lostAfter, requeue after requeueAfter, the job finishes elsewhere, and
the old agent, restarted, has its stale run killed (issue 4 acceptance 2; DESIGN 6)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import Federation, job

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]


def stale_actors(job_id: str, epoch: int) -> list[str]:
    import ray.util

    prefix = f"fedq-{job_id}-{epoch}-"
    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)]


def test_killed_agent_is_fenced_and_its_job_finishes_elsewhere_once(
    etcd_server: EtcdServer, ray_cluster: str, tmp_path: Path
) -> None:
    fed = Federation(etcd_server.connection, tmp_path)
    try:
        ray_agent = fed.join("ray-a", "ray", "--ray-address", ray_cluster, "--labels", "pool=x")
        spec = job(
            "survivor",
            command=[sys.executable, "-c", "import time; time.sleep(300)"],
            runtime="2s",
            selector={"pool": "x"},
            walltime="10m",
        )
        job_id = fed.submit(spec)
        running = fed.wait_state(job_id, {"Running"})
        assert (running["cluster"], running["epoch"]) == ("ray-a", 1)
        wait_until(lambda: stale_actors(job_id, 1), 30, "the Ray run of epoch 1")

        ray_agent.kill()
        wait_until(lambda: fed.cluster_state("ray-a") == "Unreachable", 30, "ray-a to turn Unreachable")
        requeued = fed.wait_state(job_id, {"Pending"}, timeout=30)
        assert requeued["attempt"] == 1 and "ray-a lost" in requeued["reason"]

        fed.join("sim-b", "simulated", "--labels", "pool=x")
        done = fed.wait_state(job_id, {"Succeeded", "Failed"}, timeout=60)
        assert (done["state"], done["cluster"], done["epoch"]) == ("Succeeded", "sim-b", 2)
        assert stale_actors(job_id, 1), "the stale run is still alive until its agent comes back"

        fed.restart("ray-a", "ray", "--ray-address", ray_cluster, "--labels", "pool=x")
        wait_until(lambda: not stale_actors(job_id, 1), 60, "the restarted agent to kill its stale run")
        fed.wait_ready("ray-a")

        final = fed.admin.job(job_id)
        assert final["state"] == "Succeeded"
        assert [e["to"] for e in final["events"]].count("Succeeded") == 1
        requeue_at = next(i for i, e in enumerate(final["events"]) if e["to"] == "Pending" and i > 0)
        assert all(e["epoch"] != 1 for e in final["events"][requeue_at + 1 :]), final["events"]
    finally:
        fed.close()
