"""Run ``fedq server`` (and other ``fedq`` commands) as real processes for end-to-end tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "fedq_admin_e2e-admin-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class FedqProcess:
    """A ``fedq`` subcommand in its own process, stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, args: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.args = [sys.executable, "-m", "federation.cli", *args]
        self.log_path = log
        self.env = {**os.environ, "FEDQ_ADMIN_TOKEN": ADMIN_TOKEN, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> FedqProcess:
        handle = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.args, stdout=handle, stderr=subprocess.STDOUT, env=self.env, cwd=REPO)
        handle.close()
        return self

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up (a crash)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def __enter__(self) -> FedqProcess:
        return self.start()

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()


class ServerProcess(FedqProcess):
    def __init__(self, etcd: str | None, log: Path, extra: Sequence[str] = (), port: int | None = None) -> None:
        self.port = port or free_port()
        store = ["--store", "etcd", "--etcd", etcd] if etcd else ["--store", "memory"]
        super().__init__(["server", *store, "--port", str(self.port), *extra], log)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        super().start()

        def healthy() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"fedq server exited: {self.log()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, 30, "fedq server to answer /healthz")
        return self


def cli(
    *args: str, token: str | None = None, server: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run the real ``fedq`` CLI in a subprocess, as a user would."""
    env = {**os.environ}
    if token:
        env["FEDQ_TOKEN"] = token
    if server:
        env["FEDQ_SERVER"] = server
    result = subprocess.run(
        [sys.executable, "-m", "federation.cli", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=60
    )
    if check and result.returncode != 0:
        raise AssertionError(f"fedq {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def cli_json(*args: str, token: str | None = None, server: str | None = None) -> Any:
    return json.loads(cli(*args, "--output", "json", token=token, server=server).stdout)
