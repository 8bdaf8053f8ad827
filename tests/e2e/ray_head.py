"""A Ray head of the test's own (``ray start --head --block`` in its own session), so a test can stop
and start it without touching any other Ray on the machine: killing its session's process group
ends exactly the processes it started (GCS, raylet, their workers)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

from federation.launcher import free_port

RAY = str(Path(sys.executable).with_name("ray"))
STARTS_WITHIN = 90.0
ENV = {"RAY_AUTH_MODE": "disabled"}  # a loopback test cluster: no token for the agent to find


class RayHead:
    def __init__(self, cpus: int = 2) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="fedq-ray-"))  # short: Ray's socket paths must fit 107 bytes
        self.cpus = cpus
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client_port = free_port()
        self.client_address = f"ray://127.0.0.1:{self.client_port}"  # Ray Client
        self.process: subprocess.Popen[str] | None = None
        self.starts = 0

    def start(self) -> None:
        """Returns once Ray says its runtime started (read from its output, not polled)."""
        self.starts += 1
        temp = self.work / f"ray-{self.starts}"  # a fresh session dir: a restarted head is a new cluster
        temp.mkdir(parents=True)
        ports = [self.client_port, free_port()]
        self.process = subprocess.Popen(
            [
                RAY,
                "start",
                "--head",
                "--block",
                "--node-ip-address",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--num-cpus",
                str(self.cpus),
                "--temp-dir",
                str(temp),
                "--include-dashboard=false",
                "--disable-usage-stats",
                "--ray-client-server-port",
                str(ports[0]),
                "--dashboard-agent-listen-port",
                str(ports[1]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **ENV},
            start_new_session=True,
        )
        assert self.process.stdout is not None
        answered = threading.Event()
        output: list[str] = []
        reader = threading.Thread(target=_read, args=(self.process.stdout, output, answered), daemon=True)
        reader.start()
        if not answered.wait(STARTS_WITHIN) or not any("Ray runtime started" in line for line in output):
            self.kill()
            raise RuntimeError("the Ray head did not start:\n" + "".join(output[-40:]))

    def kill(self) -> None:
        """SIGKILL the head's whole session, as a crashed head machine would stop."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.work, ignore_errors=True)


def _read(stream: IO[str], output: list[str], answered: threading.Event) -> None:
    """Drains the head's output (a full pipe would stop it); ``answered`` once its runtime started or
    the head ended."""
    try:
        for line in stream:
            output.append(line)
            if "Ray runtime started" in line:
                answered.set()
    finally:
        answered.set()
