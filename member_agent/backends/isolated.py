"""A backend in a child process, so that its client library cannot take the agent down with it.

Ray's driver aborts its whole process when the cluster's head restarts (the new head has a new
cluster id, which the driver treats as fatal). Here that kills only the child: the agent goes on
reporting (no nodes while the backend is away, so nothing is sent to it), starts a new child after
``retry_after`` seconds, and that child adopts whatever runs survived. A run the old child knew that
the new one cannot find died with the cluster: it is reported as killed by the cluster, which the
tracker hands back to the federation (Pending, not a retry), so it runs again under a new epoch and
never beside its old self.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

import structlog

from federation.parent_death import die_with_parent
from member_agent.backends.base import Backend, LaunchError, LogLines, NodeView, TaskLaunch, TaskPhase, TaskReport
from policies.clock import Clock, SystemClock

log = structlog.get_logger("fedq.agent")

CALL_WITHIN = 300.0  # seconds a backend call may take before its child is taken for hung and replaced
Run = tuple[str, str, int, int]  # job, task, index, epoch


class BackendUnavailable(LaunchError):
    """The backend's process is gone (its cluster went away); a launch is tried again once it is back."""


def _run_of(status: TaskReport | TaskLaunch) -> Run:
    return (status.job_id, status.task_name, status.index, status.epoch)


class BackendProcess:
    """The ``Backend`` protocol, each call answered by ``target`` (``module:Class`` with a
    ``from_config(settings, clock)``) in a child process that is replaced when it dies."""

    def __init__(
        self, name: str, target: str, settings: Mapping[str, Any], clock: Clock, *, retry_after: float = 5.0
    ) -> None:
        self.name = name
        self._target = target
        self._settings = dict(settings)
        self._clock = clock
        self._retry_after = retry_after
        self._context = multiprocessing.get_context("spawn")  # never fork a process with a client's threads
        self._process: Any = None
        self._pipe: Connection | None = None
        self._failed_at = float("-inf")
        self._live: dict[Run, TaskReport] = {}  # unfinished runs as the backend last told them
        self._orphans: dict[Run, TaskReport] = {}  # runs of a child that died, not yet found again
        self._lost: list[TaskReport] = []  # orphans the new child does not have: poll reports them ended
        self._start()

    # ---- the protocol ----------------------------------------------------------------------------

    def nodes(self) -> list[NodeView]:
        answer: list[NodeView] = self._call("nodes", default=[])
        return answer

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        if not self._ready():
            raise BackendUnavailable(f"the {self.name} backend is unavailable (its cluster went away); retrying")
        self._call("launch", list(gang))
        self._note([TaskReport(g.job_id, g.task_name, g.index, g.epoch, TaskPhase.PENDING, g.node) for g in gang])

    def kill(
        self, job_id: str, epoch: int | None = None, reason: str = "cancelled", tasks: Collection[str] | None = None
    ) -> None:
        if tasks is None:
            self._call("kill", job_id, epoch, reason, default=None)
        else:
            self._call("kill", job_id, epoch, reason, sorted(tasks), default=None)

    def poll(self) -> list[TaskReport]:
        events: list[TaskReport] = self._call("poll", default=[])
        self._note(events)
        lost, self._lost = self._lost, []
        return lost + events

    def tasks(self) -> list[TaskReport]:
        listed: list[TaskReport] = self._call("tasks", default=list(self._live.values()))
        self._note(listed)
        return listed

    def logs(self) -> list[LogLines]:
        """Lines still in the child when it dies are lost with it (its runs' last lines, at most)."""
        answer: list[LogLines] = self._call("logs", default=[])
        return answer

    def close(self) -> None:
        if self._pipe is not None and self._alive():
            try:
                self._pipe.send(("close", ()))
                self._pipe.poll(30.0)
            except (EOFError, OSError):
                pass
        self._stop()

    # ---- the child ---------------------------------------------------------------------------------

    def _start(self) -> None:
        parent_end, child_end = self._context.Pipe()
        self._process = self._context.Process(
            target=serve,
            args=(child_end, self._target, self._settings, os.getpid()),
            name=f"fedq-{self.name}-backend",
            daemon=True,
        )
        self._process.start()
        child_end.close()
        self._pipe = parent_end

    def _alive(self) -> bool:
        return self._process is not None and bool(self._process.is_alive())

    def _ready(self) -> bool:
        """The child is running, or a new one was started (and has found the old one's runs)."""
        if self._alive():
            return True
        if self._clock.now() - self._failed_at < self._retry_after:
            return False
        self._stop()
        self._start()
        try:
            found = {_run_of(status) for status in self._ask("tasks")}
        except _ChildGone:
            return False
        for run, status in self._orphans.items():
            if run not in found:
                self._lost.append(
                    replace(
                        status,
                        phase=TaskPhase.KILLED,
                        reason=f"lost: the {self.name} cluster lost this run while its backend was away",
                        finished_at=self._clock.now(),
                    )
                )
        log.info("backend back", backend=self.name, adopted=len(found), lost=len(self._lost))
        self._orphans = {}
        return True

    def _call(self, method: str, *args: Any, default: Any = ...) -> Any:
        if not self._ready():
            if default is ...:
                raise BackendUnavailable(f"the {self.name} backend is unavailable; retrying")
            return default
        try:
            return self._ask(method, *args)
        except _ChildGone:
            if default is ...:
                raise BackendUnavailable(f"the {self.name} backend went away during {method}") from None
            return default

    def _ask(self, method: str, *args: Any) -> Any:
        assert self._pipe is not None
        try:
            self._pipe.send((method, args))
            if not self._pipe.poll(CALL_WITHIN):
                raise _ChildGone(f"no answer to {method} in {CALL_WITHIN:g}s")
            ok, value = self._pipe.recv()
        except (EOFError, OSError, _ChildGone) as exc:
            self._gone(str(exc) or type(exc).__name__)
            raise _ChildGone from exc
        if not ok:
            raise value
        return value

    def _gone(self, why: str) -> None:
        log.warning("backend process gone", backend=self.name, why=why, runs=len(self._live))
        self._failed_at = self._clock.now()
        self._orphans.update(self._live)
        self._live = {}
        self._stop()

    def _stop(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                self._process.terminate()
            self._process.join(10.0)
            self._process = None
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def _note(self, statuses: Sequence[TaskReport]) -> None:
        for status in statuses:
            if status.phase.terminal:
                self._live.pop(_run_of(status), None)
            else:
                self._live[_run_of(status)] = status


class _ChildGone(Exception):
    pass


def serve(pipe: Connection, target: str, settings: dict[str, Any], parent: int) -> None:
    """The child: build the backend, answer calls until ``close`` or the pipe ends. Linux kills it
    when the agent dies (even by SIGKILL); the runs it started are the backend's to keep or lose."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the agent, which closes us
    module, name = target.split(":")
    backend: Backend = getattr(importlib.import_module(module), name).from_config(settings, SystemClock())
    while True:
        try:
            method, args = pipe.recv()
        except EOFError:
            break
        try:
            value = getattr(backend, method)(*args)
        except Exception as exc:  # the caller's exception to raise, as the backend raised it
            pipe.send((False, exc))
            continue
        pipe.send((True, value))
        if method == "close":
            break
