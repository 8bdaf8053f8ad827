"""The worker side of the Ray backend: one detached actor per task, owning the task's process.

The command runs in its own session (process group), so stopping it — on kill, or when the walltime
is up — signals the whole group, and whatever the command left behind is killed when it exits. A
small guard process leads that group and kills it when the runner's worker dies (a node or the head
going away kills workers with SIGKILL): a run must never outlive the actor that answers for it, or
the run that replaces it would overlap it. The
actor outlives the process and keeps its final state until the backend has collected it: an agent
restarted in a new process finds the actor by name and still learns how the run ended.

Only the standard library is used here and states are plain dicts, so the class can be shipped to a
cluster whose workers do not have fedq installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any, TypedDict

_MAX_LINE = 4096
_GUARD = """
import os, select, signal, subprocess, sys
runner, command = int(sys.argv[1]), sys.argv[2:]
if os.getppid() != runner:
    sys.exit(137)
watched = os.pidfd_open(runner)
signal.signal(signal.SIGTERM, lambda *_: None)  # the group's SIGTERM is for the command: wait for it
try:
    proc = subprocess.Popen(command)
except OSError as exc:
    print(f"cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
    sys.exit(127)
ended = os.pidfd_open(proc.pid)
forked = os.fork()
if forked == 0:
    if os.fork() == 0:  # the watchdog: no child of the runner's worker, so what kills those spares it
        ready, _, _ = select.select([watched, ended], [], [])
        if ended not in ready:
            os.killpg(0, signal.SIGKILL)
        os._exit(0)
    os._exit(0)
os.waitpid(forked, 0)  # that one only: os.wait() could reap the command and lose its exit code
code = proc.wait()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
"""Leads the command's process group and exits as the command did. Its watchdog, outside the worker's
children (Ray kills a dead worker's direct children, which would orphan the command's own), kills
the whole group when the runner's worker dies first."""
_READER_JOIN = 10.0  # long only when a process outside the killed group holds a pipe; a loaded machine needs seconds


class RunInfo(TypedDict):
    """Who the run is: enough for a backend that did not launch it to adopt it."""

    job_id: str
    task_name: str
    index: int
    epoch: int
    node: str
    placement_group: str


class Output(TypedDict):
    """New lines of one stream (``read_logs``): numbered from ``first``; ``dropped``: bytes past the
    run's log limit, not kept; ``ended``: the run is over and these are its last."""

    first: int
    lines: list[tuple[float, str]]
    dropped: int
    ended: bool


STREAMS = ("stdout", "stderr")


class RunState(TypedDict):
    """Where the run is; ``phase`` uses ``TaskPhase`` values."""

    info: RunInfo
    phase: str
    exit_code: int | None
    reason: str
    log_tail: str
    started_at: float | None
    finished_at: float | None


class TaskRunner:
    """Runs one command, enforces its walltime, reports its state and stops it on request."""

    def __init__(
        self,
        info: RunInfo,
        command: list[str],
        env: dict[str, str],
        walltime: float | None,
        log_tail_lines: int,
        stop_grace: float,
        log_limit: int | None = None,
    ) -> None:
        """``log_limit``: bytes of output kept (both streams) until read; the rest is counted, not kept."""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._tail_lines = max(log_tail_lines, 0)
        # Each stream's own last lines: two pipes read by two threads have no order between them, so the
        # tail is stdout's last lines then stderr's (which holds what a failure says, so it comes whole).
        self._tails: dict[str, deque[str]] = {name: deque(maxlen=self._tail_lines) for name in STREAMS}
        self._log_limit = log_limit
        self._kept = 0
        self._output: dict[str, deque[tuple[float, str]]] = {name: deque() for name in STREAMS}
        self._first = dict.fromkeys(STREAMS, 0)  # the number of each stream's oldest line still held
        self._dropped = dict.fromkeys(STREAMS, 0)
        self._stop_grace = stop_grace
        self._stop_reason = ""
        self._reaped = False
        self._state: RunState = {
            "info": info,
            "phase": "Running",
            "exit_code": None,
            "reason": "",
            "log_tail": "",
            "started_at": time.time(),
            "finished_at": None,
        }
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-c", _GUARD, str(os.getpid()), *command],
                env={**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            self._proc = None
            self._keep("stderr", f"cannot start {command[0]!r}: {exc}")
            self._end("Failed", 127, "start failed")
            return
        self._readers = [
            threading.Thread(target=self._read_output, args=(name, pipe), daemon=True)
            for name, pipe in (("stdout", self._proc.stdout), ("stderr", self._proc.stderr))
        ]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._monitor, daemon=True).start()
        if walltime is not None:
            timer = threading.Timer(walltime, self.stop, args=("walltime",))
            timer.daemon = True
            timer.start()

    def status(self) -> RunState:
        with self._lock:
            return self._snapshot()

    def read_logs(self, held: dict[str, int]) -> dict[str, Output]:
        """Each stream's lines from number ``held[stream]`` on; the lines before it are let go (the
        caller has them)."""
        with self._lock:
            ended = self._done.is_set()
            out: dict[str, Output] = {}
            for name, lines in self._output.items():
                start = held.get(name, 0)
                while lines and self._first[name] < start:
                    lines.popleft()
                    self._first[name] += 1
                dropped, self._dropped[name] = self._dropped[name], 0
                out[name] = {"first": self._first[name], "lines": list(lines), "dropped": dropped, "ended": ended}
            return out

    def wait(self, timeout: float) -> RunState:
        """Returns when the process has ended, or after ``timeout``: the backend keeps one call pending.

        Bounded so that calls left behind by a backend process that died do not pile up in the actor.
        """
        self._done.wait(timeout)
        return self.status()

    def stop(self, reason: str) -> RunState:
        """SIGTERM the process group, SIGKILL it after the grace period; the run ends KILLED."""
        with self._lock:
            if not self._reaped and not self._stop_reason:
                self._stop_reason = reason
                self._signal_group(signal.SIGTERM)
        if not self._done.wait(self._stop_grace):
            with self._lock:
                self._signal_group(signal.SIGKILL)
            self._done.wait(self._stop_grace)
        return self.status()

    def _monitor(self) -> None:
        assert self._proc is not None
        pid = self._proc.pid
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        with self._lock:
            # The leader is a zombie until reaped, so its group id cannot have been reused yet.
            self._signal_group(signal.SIGKILL)
            code = self._proc.wait()
            self._reaped = True
        for reader in self._readers:
            reader.join(_READER_JOIN)
        with self._lock:
            if self._stop_reason:
                self._end("Killed", code, self._stop_reason)
            elif code == 0:
                self._end("Succeeded", 0, "")
            else:
                self._end("Failed", code, f"killed by signal {-code}" if code < 0 else f"exit code {code}")

    def _read_output(self, name: str, pipe: Any) -> None:
        while raw := pipe.readline(_MAX_LINE):
            if self._log_limit is not None and self._kept + len(raw) > self._log_limit:
                with self._lock:  # past the limit: drained and counted, never held
                    self._dropped[name] += len(raw)
                continue
            self._keep(name, raw.decode(errors="replace").rstrip("\n"))

    def _keep(self, name: str, line: str) -> None:
        with self._lock:
            self._tails[name].append(line)
            if self._log_limit is not None:
                self._kept += len(line.encode()) + 1
                self._output[name].append((time.time(), line))

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None or self._reaped:
            return
        try:
            os.killpg(self._proc.pid, sig)
        except ProcessLookupError:
            pass

    def _end(self, phase: str, exit_code: int | None, reason: str) -> None:
        state = self._state
        state["phase"], state["exit_code"], state["reason"] = phase, exit_code, reason
        state["finished_at"] = time.time()
        self._done.set()

    def _snapshot(self) -> RunState:
        state: dict[str, Any] = dict(self._state)
        state["log_tail"] = "\n".join(self._last_lines())
        return state  # type: ignore[return-value]

    def _last_lines(self) -> list[str]:
        """The last ``log_tail_lines`` lines: stderr's, and before them as many of stdout's as fit."""
        errors = list(self._tails["stderr"])
        room = self._tail_lines - len(errors)
        return [*(list(self._tails["stdout"])[-room:] if room > 0 else []), *errors]
