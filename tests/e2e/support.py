"""Run the real ``fedq`` CLI in subprocesses, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "fedq_admin_e2e-admin-token"


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


def alive(pid: int) -> bool:
    """Whether a process of that id still exists (a run's process the test saw start)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def runs_recorded(runs: Path, first_waits: float) -> list[str]:
    """A command that appends its pid to ``runs``; the first run then waits ``first_waits`` seconds (to be
    stopped by the test), later runs end at once: so the file counts the runs and names the first."""
    script = (
        "import os, pathlib, sys, time; runs = pathlib.Path(sys.argv[1]);"
        "first = not runs.exists();"
        "runs.open('a').write(f'{os.getpid()}\\n');"
        f"time.sleep({first_waits:g} if first else 0)"
    )
    return [sys.executable, "-c", script, str(runs)]


def in_terminal(args: list[str], env: dict[str, str], rows: int = 40, columns: int = 120) -> tuple[Any, int]:
    """``fedq ARGS`` with a pty of ``rows`` x ``columns`` as its terminal, so rich draws live tables as at
    a person's screen; the process and the pty's reading end (the caller closes it)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, **env, "TERM": "xterm"}
    env.pop("COLUMNS", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "federation.cli", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=REPO,
    )
    os.close(follower)
    return process, leader
