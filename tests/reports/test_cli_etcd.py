"""``fedq report`` against a real uvicorn server on real etcd, in all three formats.

The accounting is what a scheduler saved two hours into the scenario (in real time, so the server's
SystemClock carries it on by the few seconds the test takes); clusters report their capacity as
agents do, through ClusterService. The server runs in a thread of this process so that it can
mount the reports router even before ``create_app`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

from federation import cli as fedq_cli
from federation import keys
from federation.api.app import create_app
from federation.auth import TokenStore
from federation.cli import report
from federation.cli.context import common_options
from federation.clusters import ClusterService
from federation.jobs import JobRepository
from federation.launcher import free_port, wait_until
from federation.models import QueueTreeConfig
from federation.models.cluster import ClusterRecord, ClusterReport, NodeReport
from federation.store import EtcdConnection, EtcdServer, EtcdStore
from policies.clock import ManualClock, SystemClock
from tests.reports.conftest import with_reports
from tests.reports.scenario import QUEUES, accountant, jobs

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

ADMIN = "fedq_admin_report-e2e-token"
HOUR = 3600.0


@pytest.fixture
def server(etcd_server: EtcdServer, store_prefix: str) -> Iterator[str]:
    """A fedq API on a free port, over the session etcd under this test's prefix."""
    port = free_port()
    holder: dict[str, uvicorn.Server] = {}

    async def serve() -> None:
        store = EtcdStore(etcd_server.connection, prefix=store_prefix)
        queues = QueueTreeConfig.model_validate(QUEUES)
        app = with_reports(create_app(store, admin_token=ADMIN, clock=SystemClock(), queues=queues))
        holder["server"] = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        try:
            await holder["server"].serve()
        finally:
            await store.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(healthy, 30, "the report test server")
    yield url
    holder["server"].should_exit = True
    thread.join(timeout=15)


async def populate(etcd: EtcdConnection, prefix: str) -> float:
    """The scenario with T0 two hours ago: jobs, the accounting saved now, two clusters' reports."""
    now = time.time()
    t0 = now - 2 * HOUR
    store = EtcdStore(etcd, prefix=prefix)
    try:
        repository = JobRepository(store)
        await repository.create(jobs(t0))
        clock = ManualClock(t0)
        acct = accountant(clock, t0=t0)
        clock.set(now)
        await acct.save(store)
        service = ClusterService(store, repository, TokenStore(store, SystemClock()), SystemClock())
        for name, cores in (("east", 30.0), ("west", 20.0)):
            await store.put(keys.cluster(name), ClusterRecord(name=name, joined_at=now).model_dump_json().encode())
            node = NodeReport(name=f"{name}-n", count=2, allocatable={"cpu": cores}, free={})
            await service.report(name, ClusterReport(nodes=[node]))
    finally:
        await store.close()
    return now


@dataclass
class Fedq:
    """``fedq ARGS`` through the CLI's own ``main`` in this process (with ``report`` registered, in
    case the installed CLI does not register it yet): exit code and output, as a user sees them."""

    server: str
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    def __call__(self, *argv: str, token: str) -> tuple[int, str, str]:
        self.monkeypatch.setenv("FEDQ_SERVER", self.server)
        self.monkeypatch.setenv("FEDQ_TOKEN", token)
        self.monkeypatch.setattr(fedq_cli, "build_parser", _parser_with_report)
        self.capsys.readouterr()
        code = fedq_cli.main(list(argv))
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def json(self, *argv: str, token: str) -> Any:
        code, out, err = self(*argv, "-o", "json", token=token)
        assert code == 0, err
        return json.loads(out)


_BUILD_PARSER = fedq_cli.build_parser


def _parser_with_report(command: str | None = None) -> argparse.ArgumentParser:
    parser = _BUILD_PARSER(command)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "report" not in commands.choices:
        report.register(commands, common_options())
    return parser


async def test_report_quota_in_every_format_against_etcd(
    etcd_server: EtcdServer,
    store_prefix: str,
    server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await populate(etcd_server.connection, store_prefix)
    fedq = Fedq(server, capsys, monkeypatch)
    alice = fedq.json("token", "create", "--tenant", "alice", token=ADMIN)["token"]
    bob = fedq.json("token", "create", "--tenant", "bob", token=ADMIN)["token"]

    body = fedq.json("report", "quota", "--since", "3h", token=ADMIN)
    rows = {row["tenant"]: row for row in body["tenants"]}
    assert set(rows) == {"alice", "bob", "carol", "dave"}
    assert body["capacity"] == {"cpu": 100.0}
    # 50 cores for 2 h, carried on by the seconds between the save and the read.
    assert rows["alice"]["resource_hours"]["cpu"] == pytest.approx(100, rel=1e-2)
    assert rows["carol"]["resource_hours"]["cpu"] == pytest.approx(20, rel=1e-9)

    code, out, _ = fedq("report", "quota", "-o", "csv", token=ADMIN)
    assert code == 0
    assert [row["tenant"] for row in csv.DictReader(io.StringIO(out))] == ["alice", "bob", "carol", "dave"]
    code, out, _ = fedq("report", "quota", "--by", "cluster", "-o", "csv", token=ADMIN)
    pairs = sorted((row["tenant"], row["cluster"]) for row in csv.DictReader(io.StringIO(out)))
    assert pairs == [("alice", "east"), ("bob", "west"), ("carol", "east"), ("dave", "west")]

    code, out, _ = fedq("report", "quota", token=alice)
    assert code == 0 and "TENANT" in out and "alice" in out and "dave" not in out

    plot = tmp_path / "quota.png"
    code, _, err = fedq("report", "quota", "--since", "3h", "--plot", str(plot), token=alice)
    assert code == 0, err
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    code, _, err = fedq("report", "quota", "--tenant", "alice", token=bob)
    assert code == 1 and "tenant 'bob' cannot see the report of tenant 'alice'" in err
    code, _, err = fedq("report", "quota", "--tenant", "zed", token=ADMIN)
    assert code == 1 and "unknown tenant 'zed'" in err

    assert fedq.json("report", "userprio", token=ADMIN)["rows"][-1]["tenant"] == "alice"
    code, out, _ = fedq("report", "userprio", "-o", "yaml", token=bob)
    assert code == 0 and [row["tenant"] for row in yaml.safe_load(out)["rows"]] == ["bob"]
