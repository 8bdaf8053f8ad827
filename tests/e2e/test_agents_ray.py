"""Jobs submitted through the API run for real on the Ray backend, through a real server on real etcd
and a real member agent process (DESIGN 3.5; issue 4 acceptance 1)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from federation.client import FedqError
from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import alive

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]
PY = sys.executable
# No test here loses the cluster: a long lostAfter keeps an agent that Ray starves of CPU on a loaded
# machine from being declared lost, with its jobs requeued under the tests' feet.
# Failed runs are retried after 1 s, then 2 s: the tests of one failed run ask for no retries.
CONFIG = {**FAST, "cluster": {"lostAfter": "60s", "requeueAfter": "120s"}, "jobs": {"retryBackoff": "1s"}}


@pytest.fixture(scope="module")
def federation(
    etcd_server: EtcdServer, ray_cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Federation]:
    fed = Federation(etcd_server.connection, tmp_path_factory.mktemp("fed-ray"), CONFIG)
    try:
        fed.join("ray-a", "ray", "--ray-address", ray_cluster, "--labels", "backend=ray")
        yield fed
    finally:
        fed.close()


def test_exit_codes_become_job_states(federation: Federation) -> None:
    ok = federation.submit(job("ok", command=[PY, "-c", "print('fine')"]))
    failing = [PY, "-c", "import sys; print('about to fail'); sys.exit(3)"]
    bad = federation.submit(job("bad", command=failing, max_retries=0))
    done = federation.wait_state(ok, {"Succeeded", "Failed"})
    assert (done["state"], done["cluster"], done["exit_code"]) == ("Succeeded", "ray-a", 0)
    failed = federation.wait_state(bad, {"Succeeded", "Failed"})
    assert (failed["state"], failed["exit_code"]) == ("Failed", 3)
    assert "about to fail" in failed["log_tail"]
    assert [e["to"] for e in done["events"]][:2] == ["Pending", "Dispatched"]


def test_a_gang_starts_all_together(federation: Federation, tmp_path: Path) -> None:
    """Each task marks itself started, then waits for all three marks: only a gang started together succeeds."""
    script = (
        "import os, pathlib, sys, time; d = pathlib.Path(sys.argv[1]);"
        "(d / os.environ['FEDQ_TASK_INDEX']).touch();"
        "deadline = time.time() + 20;"
        "ok = lambda: len(list(d.iterdir())) == 3;"
        "[time.sleep(0.05) for _ in iter(lambda: ok() or time.time() > deadline, True)];"
        "sys.exit(0 if ok() else 7)"
    )
    gang = federation.submit(job("gang", command=[PY, "-c", script, str(tmp_path)], replicas=3, min_available=3))
    done = federation.wait_state(gang, {"Succeeded", "Failed"})
    assert done["state"] == "Succeeded", done
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0", "1", "2"]


def test_cancel_stops_a_running_task(federation: Federation, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    job_id = federation.submit(job("sleeper", command=[PY, "-c", script]))
    federation.wait_state(job_id, {"Running"})
    pid = int(wait_until(lambda: pid_file.exists() and pid_file.read_text(), 30, "the task to write its pid"))
    federation.admin.cancel(job_id)
    done = federation.wait_state(job_id, {"Cancelled", "Failed", "Succeeded"})
    assert done["state"] == "Cancelled"
    wait_until(lambda: not alive(pid), 15, f"process {pid} to be gone")


def test_walltime_kills_an_overrunning_task(federation: Federation) -> None:
    overrun = [PY, "-c", "import time; time.sleep(120)"]
    job_id = federation.submit(job("overrun", command=overrun, walltime="2s", max_retries=0))
    done = federation.wait_state(job_id, {"Succeeded", "Failed", "Cancelled"})
    assert done["state"] == "Failed"
    assert "walltime" in done["reason"]
    running = next(e for e in done["events"] if e["to"] == "Running")
    assert done["end_time"] - running["time"] < 30


def test_a_task_without_a_command_fails_after_its_retries(federation: Federation) -> None:
    """Refused at submit (the only cluster runs Ray); accepted anyway, each launch fails at once on the
    agent, each failure is retried after its backoff, and the job ends Failed with the reason."""
    bare = job("bare", max_retries=2)
    with pytest.raises(FedqError) as refused:
        federation.submit(bare)
    assert refused.value.status == 422
    assert [f["field"] for f in refused.value.fields] == ["spec.tasks[0].command"]
    job_id = str(federation.admin.submit(bare, tenant="alice", allow_unschedulable=True)["id"])
    done = federation.wait_state(job_id, {"Succeeded", "Failed"})
    assert (done["state"], done["retries"]) == ("Failed", 2)
    assert done["reason"] == "task main has no command: the Ray backend runs a task's command (after 2 retries)"
    dispatched = [e for e in done["events"] if e["to"] == "Dispatched"]
    retried = [e for e in done["events"] if e["to"] == "Pending" and "retry" in e["reason"]]
    assert [e["cluster"] for e in dispatched] == ["ray-a"] * 3
    assert [e["reason"].rsplit(";", 1)[1] for e in retried] == [" retry 1 of 2 in 1s", " retry 2 of 2 in 2s"]
    for retry, again, backoff in zip(retried, dispatched[1:], (1.0, 2.0), strict=True):
        assert again["time"] - retry["time"] >= backoff
