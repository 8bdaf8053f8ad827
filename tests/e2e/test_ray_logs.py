"""Job logs end to end on the Ray backend (issue 24, acceptance 1): a real server on real etcd, a real agent
process on the session's local Ray. A job prints 1,000 lines to stdout and 3 to stderr: ``fedq logs``
shows them all in order, ``--stderr`` only those, ``--follow`` shows a line within 5 s of its print, and
another tenant gets a 404. A job printing 100 MiB is cut at ``logs.maxBytesPerJob`` (1 MiB here) with a
marker line, and neither the server's memory nor etcd's database grows with it."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.cli import main
from federation.client import FedqClient, FedqError
from federation.launcher import wait_until
from federation.store import EtcdServer, EtcdStore
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import ADMIN_TOKEN

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]
MIB = 1024 * 1024
CONFIG = {**FAST, "cluster": {"lostAfter": "60s", "requeueAfter": "120s"}}
# 500 lines, a pause (a follower must see line 500 within 5 s of its print), 500 more; 3 on stderr.
SCRIPT = """
import pathlib, sys, time
for i in range(500):
    print(f"out {i}")
print("err 0", file=sys.stderr, flush=True)
sys.stdout.flush()
time.sleep(4)
pathlib.Path(sys.argv[1]).write_text(repr(time.time()))
print("out 500", flush=True)
time.sleep(1)
for i in range(501, 1000):
    print(f"out {i}")
sys.stdout.flush()
time.sleep(0.5)  # stdout's last lines read before stderr's: their times say in which order they came
print("err 1", file=sys.stderr)
print("err 2", file=sys.stderr)
"""
FLOOD = "import sys; line = 'x' * 99 + '\\n'; w = sys.stdout.write; [w(line) for _ in range(1 << 20)]"  # 100 MiB


@pytest.fixture(scope="module")
def fed(etcd_server: EtcdServer, ray_cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    work = tmp_path_factory.mktemp("ray-logs")
    config = {**CONFIG, "logs": {"dir": str(work / "logs"), "maxBytesPerJob": "1Mi"}}
    federation = Federation(etcd_server.connection, work, config)
    try:
        federation.join("ray-logs", "ray", "--ray-address", ray_cluster)
        yield federation
    finally:
        federation.close()


def fedq(fed: Federation, capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    code = main([*args, "--server", fed.server.url, "--token", ADMIN_TOKEN, "--ca", fed.ca])
    assert code == 0
    return capsys.readouterr().out.splitlines()


def follow(fed: Federation, job_id: str, seen: list[tuple[float, dict[str, Any]]]) -> threading.Thread:
    """Read the job's log stream in a thread, noting when each line arrived."""

    def read() -> None:
        with FedqClient(fed.server.url, ADMIN_TOKEN, ca=fed.ca) as client:
            for line in client.logs(job_id, follow=True):
                seen.append((time.time(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_ray_jobs_stdout_and_stderr_in_order_followed_live_and_only_for_its_tenant(
    fed: Federation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed_at = tmp_path / "printed_at"
    job_id = fed.submit(job("chatty", command=[sys.executable, "-c", SCRIPT, str(printed_at)]))
    fed.wait_state(job_id, {"Running"})
    seen: list[tuple[float, dict[str, Any]]] = []
    reader = follow(fed, job_id, seen)
    reader.join(60)
    assert not reader.is_alive(), "the log stream did not end with the job"
    assert fed.admin.job(job_id)["state"] == "Succeeded"

    arrived = next(when for when, line in seen if line["text"] == "out 500")
    assert arrived - float(printed_at.read_text()) < 5.0
    assert [line["text"] for _, line in seen if line["stream"] == "stdout"] == [f"out {i}" for i in range(1000)]

    shown = fedq(fed, capsys, "logs", job_id)
    assert [text for text in shown if text.startswith("out")] == [f"out {i}" for i in range(1000)]
    assert sorted(text for text in shown if text.startswith("err")) == ["err 0", "err 1", "err 2"]
    assert len(shown) == 1003
    assert shown.index("err 0") < shown.index("out 500")  # stderr and stdout interleaved by the time printed
    assert fedq(fed, capsys, "logs", job_id, "--stderr") == ["err 0", "err 1", "err 2"]
    assert fedq(fed, capsys, "logs", job_id, "--tail", "3") == ["out 999", "err 1", "err 2"]
    assert fedq(fed, capsys, "logs", job_id, "--stderr", "--tail", "1", "--prefix") == ["[main-0] err 2"]

    bob = fed.admin.create_tenant_token("bob")
    with FedqClient(fed.server.url, bob, ca=fed.ca) as client, pytest.raises(FedqError) as refused:
        list(client.logs(job_id))
    assert refused.value.status == 404


def rss(pid: int) -> int:
    """The process's resident memory in bytes, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


async def etcd_size(etcd: EtcdServer) -> int:
    store = EtcdStore(etcd.connection)
    try:
        return await store.size()
    finally:
        await store.close()


def test_a_job_printing_100_mib_is_cut_at_the_limit_and_nothing_grows_with_it(
    fed: Federation, etcd_server: EtcdServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fed.server.process is not None
    server = fed.server.process.pid
    memory, database = rss(server), asyncio.run(etcd_size(etcd_server))
    job_id = fed.submit(job("flood", command=[sys.executable, "-c", FLOOD]))
    assert fed.wait_state(job_id, {"Succeeded", "Failed", "Cancelled"}, timeout=120)["state"] == "Succeeded"
    with FedqClient(fed.server.url, ADMIN_TOKEN, ca=fed.ca) as client:
        wait_until(lambda: client.request("GET", f"/v1/jobs/{job_id}/logs")["complete"], 30, "the output to be in")
    shown = fedq(fed, capsys, "logs", job_id)
    assert shown[-1] == "[fedq] output cut at 1Mi (logs.maxBytesPerJob): the rest of this run's output was not kept"
    assert set(shown[:-1]) == {"x" * 99} and 10_000 <= len(shown) - 1 <= MIB // 100
    grew_memory, grew_database = rss(server) - memory, asyncio.run(etcd_size(etcd_server)) - database
    assert grew_memory < 40 * MIB, f"the server's RSS grew by {grew_memory / MIB:.1f} MiB"
    assert grew_database < 8 * MIB, f"etcd's database grew by {grew_database / MIB:.1f} MiB"
    journal = sum(path.stat().st_size for path in (fed.work / "logs" / job_id).iterdir())
    assert journal < 2 * MIB
    print(
        f"100 MiB job: server RSS +{grew_memory / MIB:.1f} MiB, etcd +{grew_database / MIB:.2f} MiB, "
        f"log store {journal / MIB:.2f} MiB",
        file=sys.stderr,
    )
