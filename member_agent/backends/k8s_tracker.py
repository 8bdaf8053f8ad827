"""Turns what the cache observes of task pods into the status changes ``poll()`` hands out, each once.

Keyed by pod name (one pod per task and epoch). Rules: a change is emitted only when phase, exit code
or reason differ from the last emitted one; nothing follows a terminal status; a pod the agent asked to
kill reports KILLED with the agent's reason whatever its container did on SIGTERM, and reports nothing
between the kill and the end; a pod that vanishes before ending reports KILLED. Not thread-safe: the
cluster state calls it under its lock.
"""

from __future__ import annotations

from dataclasses import replace

from member_agent.backends.base import TaskPhase, TaskReport

DELETED_REASON = "deleted"


def _same(a: TaskReport, b: TaskReport) -> bool:
    return (a.phase, a.exit_code, a.reason) == (b.phase, b.exit_code, b.reason)


class TaskTracker:
    def __init__(self) -> None:
        self._last: dict[str, TaskReport] = {}
        self._pending: list[tuple[str, TaskReport]] = []
        self._kill_reasons: dict[str, str] = {}
        self._final_since: dict[str, float] = {}

    def baseline(self, name: str, status: TaskReport, now: float) -> None:
        """Adopt a pod found at start-up without reporting it: ``tasks()`` is how a restart learns of it."""
        self._last[name] = status
        if status.phase.terminal:
            self._final_since[name] = now

    def observe(self, name: str, status: TaskReport) -> None:
        last = self._last.get(name)
        if last is not None and last.phase.terminal:
            return
        kill_reason = self._kill_reasons.get(name)
        if kill_reason is not None:
            if not status.phase.terminal:
                return
            status = replace(status, phase=TaskPhase.KILLED, reason=kill_reason)
        if last is not None and _same(last, status):
            return
        self._last[name] = status
        self._pending.append((name, status))

    def gone(self, name: str, last_seen: TaskReport, now: float) -> None:
        """The pod no longer exists: if it had not ended, it was killed (by the agent or by someone else)."""
        if last_seen.phase.terminal:
            self.observe(name, last_seen)
        else:
            reason = self._kill_reasons.get(name, DELETED_REASON)
            self.observe(name, replace(last_seen, phase=TaskPhase.KILLED, reason=reason, finished_at=now))
        self._last.pop(name, None)
        self._kill_reasons.pop(name, None)
        self._final_since.pop(name, None)

    def kill_requested(self, name: str, reason: str) -> bool:
        """Remember why the agent kills this pod; False when it has already ended and nothing changes."""
        last = self._last.get(name)
        if last is not None and last.phase.terminal:
            return False
        self._kill_reasons.setdefault(name, reason)
        return True

    def status_of(self, name: str) -> TaskReport | None:
        return self._last.get(name)

    def has_pending(self) -> bool:
        return bool(self._pending)

    def drain(self, now: float) -> list[TaskReport]:
        """The changes since the last drain, oldest first; terminal ones start their retention clock."""
        drained, self._pending = self._pending, []
        for name, status in drained:
            if status.phase.terminal and name in self._last:
                self._final_since.setdefault(name, now)
        return [status for _, status in drained]

    def finished_before(self, cutoff: float) -> list[str]:
        """Pods whose final status was handed out (or adopted) at or before ``cutoff``: safe to delete."""
        return [name for name, since in self._final_since.items() if since <= cutoff]

    def forget_final(self, name: str) -> None:
        self._final_since.pop(name, None)
