"""Start ``fedq`` components as child processes: used by ``fedq up``, end-to-end tests and benchmarks.

Each child is stopped with SIGTERM (then SIGKILL) by whoever started it; nothing is found or killed
by name.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import httpx

from federation.cli.server import etcd_flags

if TYPE_CHECKING:
    from federation.store import EtcdConnection
    from federation.tls import KeyPair

T = TypeVar("T")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``predicate`` until it returns something truthy; raise TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


class FedqProcess:
    """``python -m federation.cli ARGS`` in its own process, its output in ``log``."""

    def __init__(self, args: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.args = [sys.executable, "-m", "federation.cli", *args]
        self.log_path = log
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> FedqProcess:
        with open(self.log_path, "ab") as handle:
            self.process = subprocess.Popen(self.args, stdout=handle, stderr=subprocess.STDOUT, env=self.env)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, as in a crash."""
        if self.alive:
            assert self.process is not None
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive:
            return
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def __enter__(self) -> FedqProcess:
        return self.start()

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()


class ServerProcess(FedqProcess):
    """``fedq server`` on a free loopback port (on etcd, or the memory store without ``etcd``);
    ``start`` returns once /healthz answers."""

    def __init__(
        self,
        etcd: EtcdConnection | None,
        log: Path,
        extra: Sequence[str] = (),
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        tls: tuple[KeyPair, Path] | None = None,
    ) -> None:
        """``tls``: serve https with this certificate, which the CA file next to it signed."""
        self.port = port or free_port()
        self.ca = None if tls is None else tls[1]
        store, etcd_env = etcd_flags(etcd) if etcd is not None else (["--store", "memory"], {})
        served = [] if tls is None else ["--tls-cert", str(tls[0].cert), "--tls-key", str(tls[0].key)]
        super().__init__(
            ["server", *store, "--port", str(self.port), *served, *extra], log, {**etcd_env, **(env or {})}
        )

    @property
    def url(self) -> str:
        return f"{'http' if self.ca is None else 'https'}://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        super().start()

        def healthy() -> bool:
            if not self.alive:
                raise RuntimeError(f"fedq server exited:\n{self.log()}")
            try:
                verify = True if self.ca is None else ssl.create_default_context(cafile=self.ca)
                return httpx.get(f"{self.url}/healthz", timeout=1, verify=verify).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, 60, "fedq server to answer /healthz")
        return self
