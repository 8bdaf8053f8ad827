"""Watch and wait against a real server on real etcd with a simulated agent (issue 23, acceptance 1):
``submit --wait`` returns when the jobs end, 0 when all succeeded and 4 when one failed; ``job --follow``
prints each transition once, also when the server restarts mid-stream (the client resumes after the last
revision it read)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.cli.watching import EXIT_NOT_SUCCEEDED
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import REPO, in_terminal

pytestmark = [pytest.mark.etcd, pytest.mark.slow]


def fedq(fed: Federation, token: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FEDQ_SERVER": fed.server.url, "FEDQ_TOKEN": token, "FEDQ_CA": fed.ca}
    return subprocess.Popen(
        [sys.executable, "-m", "federation.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def finished(process: subprocess.Popen[str], timeout: float = 90) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def write_jobs(path: Path, *jobs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(jobs))
    return str(path)


@pytest.fixture
def fed(etcd_server: EtcdServer, tmp_path: Path) -> Any:
    federation = Federation(etcd_server.connection, tmp_path, FAST)
    try:
        federation.join("east", "simulated")
        yield federation
    finally:
        federation.close()


def test_submit_wait_exits_0_when_all_succeed_and_4_when_one_fails(fed: Federation, tmp_path: Path) -> None:
    alice = fed.admin.create_tenant_token("alice")
    good = write_jobs(tmp_path / "good.yaml", job("ok-1", runtime="1s"), job("ok-2", runtime="2s"))
    code, out, err = finished(fedq(fed, alice, "submit", good, "--wait", "-o", "json"))
    assert code == 0, err
    ended = json.loads(out)["ended"]
    assert sorted(ended.values()) == ["Succeeded", "Succeeded"]
    assert all(fed.admin.job(job_id)["state"] == "Succeeded" for job_id in ended)  # it returned after they ended

    over_walltime = job("too-long", runtime="30s", walltime="1s")  # killed at its walltime: Failed, no retry
    mixed = write_jobs(tmp_path / "mixed.yaml", job("ok-3", runtime="1s"), over_walltime)
    code, out, err = finished(fedq(fed, alice, "submit", mixed, "--wait"))
    assert code == EXIT_NOT_SUCCEEDED, err
    assert "Failed" in out and "Succeeded" in out


def test_follow_prints_each_transition_once_across_a_server_restart(fed: Federation) -> None:
    alice = fed.admin.create_tenant_token("alice")
    job_id = fed.submit(job("followed", runtime="8s"))
    follower = fedq(fed, alice, "job", job_id, "--follow", "-o", "json")
    assert follower.stdout is not None
    printed = []
    for line in follower.stdout:  # read up to the Running transition, then restart the server under it
        printed.append(json.loads(line))
        if printed[-1]["to"] == "Running":
            break
    cut_at = time.time()  # the events' times are the server's wall clock
    fed.server.stop()
    fed.server.start()
    code, rest, err = finished(follower)
    printed += [json.loads(line) for line in rest.splitlines()]

    assert code == 0, err
    history = fed.admin.job(job_id)["events"]
    seen = [(e["time"], e["from"], e["to"], e["epoch"]) for e in printed]
    assert seen == [(e["time"], e.get("from"), e["to"], e.get("epoch", 0)) for e in history]  # once each, in order
    assert [e["to"] for e in printed][-2:] == ["Running", "Succeeded"]
    assert printed[-1]["time"] > cut_at  # the end came on the resumed stream, not the first one
    revisions = [e["revision"] for e in printed]
    assert revisions == sorted(revisions)


def test_jobs_watch_shows_a_new_job_and_drops_it_when_it_ends_without_a_restart(fed: Federation) -> None:
    """``fedq jobs --watch`` in a terminal (a pty, so rich draws its live table): the table starts empty,
    a job submitted afterwards appears in it, and leaves it once it ends (the default lists unfinished
    jobs, as squeue does); Ctrl-C stops it with 130."""
    alice = fed.admin.create_tenant_token("alice")
    env = {"FEDQ_SERVER": fed.server.url, "FEDQ_TOKEN": alice, "FEDQ_CA": fed.ca}
    watcher, leader = in_terminal(["jobs", "--watch"], env)
    screen = ""

    def drawn_after(start: int, text: str, timeout: float = 60) -> int:
        """Read the terminal until ``text`` is drawn after position ``start``; where it ends."""
        nonlocal screen
        deadline = time.monotonic() + timeout
        while (at := screen.find(text, start)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} not drawn within {timeout}s; drawn since:\n{screen[start:]}"
            if select.select([leader], [], [], left)[0]:
                screen += os.read(leader, 65536).decode(errors="replace")
        return at + len(text)

    try:
        empty = drawn_after(0, "0 jobs (Ctrl-C to stop)")
        job_id = fed.submit(job("watched-job", runtime="3s"))
        listed = drawn_after(empty, "1 jobs (Ctrl-C to stop)")
        drawn_after(listed, "watched-job")
        fed.wait_state(job_id, {"Succeeded"})
        drawn_after(listed, "0 jobs (Ctrl-C to stop)")
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=30) == 130
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        os.close(leader)
