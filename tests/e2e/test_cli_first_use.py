"""What a Slurm or HTCondor user tried first with the ``fedq`` CLI (issue 36, "What was seen", the CLI's
part), each against a real server on real etcd with a simulated agent, through the real CLI in a
subprocess: global flags before the command, an API error printed once, relative times computed when
printed (``job --follow``, ``jobs --watch``), ``fedq submit`` overrides, every example accepted for the
README's tenant, and an unmappable ``#SBATCH`` line refused by its number. The sbatch and condor
examples run to Succeeded on a Ray cluster."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import REPO, cli, in_terminal

pytestmark = [pytest.mark.etcd, pytest.mark.slow]
EXAMPLES = REPO / "configs" / "examples"
SUBMIT_FILES = ["sbatch-hello.sh", "sbatch-array.sh", "sbatch-tasks.sh", "condor-hello.sub"]


@pytest.fixture(scope="module")
def fed(etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    federation = Federation(etcd_server.connection, tmp_path_factory.mktemp("fed-cli"), FAST)
    try:
        federation.join("east", "simulated")
        yield federation
    finally:
        federation.close()


@pytest.fixture(scope="module")
def alice(fed: Federation) -> str:
    """The tenant the README creates (``fedq token create --tenant alice``)."""
    return fed.admin.create_tenant_token("alice")


def fedq(fed: Federation, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with the server, CA and token in the environment, as the README exports them."""
    env = {**os.environ, "FEDQ_SERVER": fed.server.url, "FEDQ_TOKEN": token, "FEDQ_CA": fed.ca, "COLUMNS": "200"}
    command = [sys.executable, "-m", "federation.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_global_flags_work_before_the_command(fed: Federation, alice: str) -> None:
    """``fedq --token T jobs`` was ``invalid choice: 'T'``: the flags only worked after the command."""
    result = cli("--server", fed.server.url, "--token", alice, "--ca", fed.ca, "-o", "json", "jobs", check=False)
    print("exit", result.returncode, result.stderr.strip()[:200])
    assert result.returncode == 0, result.stderr
    assert "items" in json.loads(result.stdout)
    wrong = cli("--token", "nope", "--server", fed.server.url, "--ca", fed.ca, "jobs", check=False)
    assert wrong.returncode == 1 and "invalid choice" not in wrong.stderr, wrong.stderr
    print("a bad token before the command:", wrong.stderr.strip())
    assert "token" in wrong.stderr.lower()


def test_an_api_error_is_printed_once(fed: Federation, alice: str, tmp_path: Path) -> None:
    """The headline already named the field (``invalid job spec: spec.tasks[0].replicas: ...``); the
    field list printed it again below."""
    spec = job("bad")
    spec["spec"]["tasks"][0]["replicas"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    result = fedq(fed, alice, "submit", str(path))
    print(result.stderr)
    assert result.returncode == 1
    said = "greater than or equal to 1"
    assert result.stderr.count(said) == 1, f"printed {result.stderr.count(said)} times:\n{result.stderr}"


def test_follow_prints_each_time_relative_to_when_it_is_printed(fed: Federation, alice: str) -> None:
    """At 15:52:07 ``--follow`` printed ``15:52:07 (in 2s)``: every time was taken against the moment the
    command started. A job released 3 s after ``--follow`` started must print its events as now or past."""
    job_id = fed.submit(job("followed", runtime="1s"))
    fed.admin.request("POST", "/v1/jobs/actions", body={"action": "hold", "ids": [job_id]})
    env = {**os.environ, "FEDQ_SERVER": fed.server.url, "FEDQ_TOKEN": alice, "FEDQ_CA": fed.ca}
    follower = subprocess.Popen(
        [sys.executable, "-m", "federation.cli", "job", job_id, "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "COLUMNS": "200"},
        cwd=REPO,
    )
    time.sleep(3)  # the point: time passing between the command's start and the events it prints
    fed.admin.request("POST", "/v1/jobs/actions", body={"action": "release", "ids": [job_id]})
    out, err = follower.communicate(timeout=60)
    print(out)
    assert follower.returncode == 0, err
    ahead = [line for line in out.splitlines() if "(in " in line]
    assert ahead == [], f"{len(ahead)} lines say a past event is ahead: {ahead}"


def test_jobs_watch_ages_count_up(fed: Federation, alice: str) -> None:
    """``fedq jobs --watch`` kept AGE at ``now`` (and ``in 3s``) for a job submitted after it started: the
    table's times were taken against the command's start. In a terminal (a pty), a held job's AGE must
    read seconds ago once seconds have passed, as the table is drawn again."""
    env = {"FEDQ_SERVER": fed.server.url, "FEDQ_TOKEN": alice, "FEDQ_CA": fed.ca}
    watcher, leader = in_terminal(["jobs", "--watch"], env, columns=160)
    screen = ""

    def read_for(seconds: float) -> None:
        nonlocal screen
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if select.select([leader], [], [], left)[0]:
                try:
                    screen += os.read(leader, 65536).decode(errors="replace")
                except OSError:
                    return

    try:
        read_for(5)  # its first table drawn
        held = fedq(fed, alice, "submit", str(EXAMPLES / "hello.yaml"), "--hold", "--allow-unschedulable", "-o", "json")
        job_id = json.loads(held.stdout)["id"]
        read_for(4)
        fed.submit(job("another", runtime="1s"))  # a change on the stream: the table is drawn again
        read_for(2)
        rows = [line for line in re.split(r"[\r\n]", screen) if job_id in line]
        ages = [int(seconds) for row in rows for seconds in re.findall(r"\b(\d+)s ago\b", row)]
        print("the held job's last rows:", [row.strip()[:150] for row in rows[-2:]], "ages:", ages)
        assert rows, screen[-2000:]
        assert ages and max(ages) >= 3, f"AGE never counted up: {rows[-1].strip()[:200]}"
    finally:
        watcher.kill()
        watcher.wait()
        os.close(leader)


def test_submit_takes_sbatch_style_overrides(fed: Federation, alice: str) -> None:
    """``--queue --priority --walltime --array --hold --name`` over the file, as sbatch's flags over its
    ``#SBATCH`` lines (before: ``unrecognized arguments``)."""
    result = fedq(
        fed,
        alice,
        "submit",
        str(EXAMPLES / "hello.yaml"),
        *("--queue", "prod.batch", "--priority", "7", "--walltime", "90s", "--array", "0-3%2"),
        *("--hold", "--name", "renamed", "--allow-unschedulable", "-o", "json"),
    )
    print(result.returncode, result.stderr.strip()[:300])
    assert result.returncode == 0, result.stderr
    ids = json.loads(result.stdout)["ids"]
    jobs = [fed.admin.job(job_id) for job_id in ids]
    seen = {(j["name"], j["queue"], j["priority"], j["spec"]["walltime"], bool(j.get("held_by"))) for j in jobs}
    print("submitted:", len(ids), seen)
    assert len(ids) == 4
    assert seen == {("renamed", "prod.batch", 7, 90.0, True)}


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if p.name != "workload.yaml"))
def test_every_example_is_accepted_for_the_readme_tenant(fed: Federation, alice: str, name: str) -> None:
    """``configs/examples/gang.yaml`` was a 403 for alice (``research.nlp`` is carol's). Each example is
    submitted held (the federation's one simulated cluster is not what some were written for)."""
    result = fedq(fed, alice, "submit", str(EXAMPLES / name), "--hold", "--allow-unschedulable", "-o", "json")
    print(name, result.returncode, result.stderr.strip()[:300])
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer.get("id") or answer.get("ids")


def test_an_unmappable_directive_is_refused_naming_its_line(fed: Federation, alice: str, tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/bash\n#SBATCH --partition=research.vision\n#SBATCH -n 1\n#SBATCH --exclusive\necho hi\n")
    result = fedq(fed, alice, "submit", str(script))
    print(result.stderr.strip())
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {script}:4: #SBATCH --exclusive cannot be mapped: "), result.stderr


@pytest.fixture(scope="module")
def ray_fed(
    etcd_server: EtcdServer, ray_cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Federation]:
    config = {**FAST, "cluster": {"lostAfter": "60s", "requeueAfter": "120s"}}
    federation = Federation(etcd_server.connection, tmp_path_factory.mktemp("fed-cli-ray"), config)
    try:
        federation.join("ray-a", "ray", "--ray-address", ray_cluster, "--labels", "backend=ray")
        yield federation
    finally:
        federation.close()


@pytest.mark.ray
def test_the_sbatch_and_condor_examples_run_to_succeeded(ray_fed: Federation) -> None:
    """The three sbatch scripts and the condor file, as alice, ``--wait``: exit 0 when all succeeded;
    their output is the script's."""
    alice = ray_fed.admin.create_tenant_token("alice")
    for name in SUBMIT_FILES:
        started = time.monotonic()
        result = fedq(ray_fed, alice, "submit", str(EXAMPLES / name), "--wait", "-o", "json")
        ended = json.loads(result.stdout)["ended"] if result.returncode in (0, 4) else {}
        print(name, result.returncode, ended, f"{time.monotonic() - started:.1f}s", result.stderr.strip()[:200])
        assert result.returncode == 0, result.stderr
        assert set(ended.values()) == {"Succeeded"}
    tasks = next(j for j in ray_fed.admin.jobs() if j["name"] == "sbatch-tasks")
    lines = [line["text"] for line in ray_fed.admin.logs(tasks["id"])]
    print("sbatch-tasks printed:", lines)
    assert sorted(line.split(" of job")[0] for line in lines) == ["task 0", "task 1"]
