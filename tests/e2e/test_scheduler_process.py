"""``fedq server`` on etcd runs its scheduler in a child process: the child leads, answers /healthz and
/metrics through the server, resigns on a clean stop, and dies with a SIGKILLed server (a crashed
server must not leave a leader that keeps dispatching)."""

from __future__ import annotations

import asyncio
import os
import select
import uuid
from pathlib import Path

import httpx
import pytest

from federation import keys
from federation.launcher import ServerProcess, wait_until
from federation.store import EtcdServer, EtcdStore
from tests.e2e.support import ADMIN_TOKEN

pytestmark = [pytest.mark.etcd]


def scheduler_child(pid: int) -> int:
    """The server's spawned child (its other one is multiprocessing's resource tracker)."""
    (child,) = (
        int(c)
        for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()
    )
    return child


def exits_within(pid: int, seconds: float) -> bool:
    """Waits on the process's pidfd (an event), not by polling /proc."""
    fd = os.pidfd_open(pid)
    try:
        readable, _, _ = select.select([fd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(fd)


def leads(server: ServerProcess) -> bool:
    return bool(httpx.get(f"{server.url}/healthz", timeout=10).json()["leader"])


async def leader_key(etcd: EtcdServer, prefix: str) -> bytes | None:
    store = EtcdStore(etcd.connection, prefix=prefix)
    try:
        kv = await store.get(keys.LEADER)
        return None if kv is None else kv.value
    finally:
        await store.close()


def test_the_scheduler_child_leads_reports_and_dies_with_a_killed_server(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    prefix = f"/e2e-{uuid.uuid4().hex}/"
    server = ServerProcess(
        etcd_server.connection, tmp_path / "server.log", ["--prefix", prefix], env={"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}
    )
    with server:
        assert server.process is not None
        wait_until(lambda: leads(server), 30, "the scheduler child to lead")
        child = scheduler_child(server.process.pid)
        metrics = httpx.get(
            f"{server.url}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10
        ).text
        assert "fedq_scheduler_leader 1.0" in metrics  # the child's series, served by the API
        assert "fedq_api_request_seconds" in metrics
        server.kill()
        assert exits_within(child, 10), "the scheduler outlived its server"


def test_a_stopped_server_hands_the_lease_over_at_once(etcd_server: EtcdServer, tmp_path: Path) -> None:
    prefix = f"/e2e-{uuid.uuid4().hex}/"
    server = ServerProcess(
        etcd_server.connection, tmp_path / "server.log", ["--prefix", prefix], env={"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}
    )
    with server:
        wait_until(lambda: leads(server), 30, "the scheduler child to lead")
        assert asyncio.run(leader_key(etcd_server, prefix)) is not None
    # stop() waited for the server, which waited for its child to resign: the key is gone, not expiring
    assert asyncio.run(leader_key(etcd_server, prefix)) is None
