"""The audit log: one JSON line per privileged action (who, what, when, result), for whoever answers for
the federation.

``audit.log`` in federation.yaml says where: ``stderr`` (the default, next to the server's log) or a
file, appended to and created mode 0600. The file is opened for each line, so a log rotator may move
it away at any time. Times are the server's clock: epoch seconds and the same in ISO 8601.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from federation.auth import Principal
from policies.clock import Clock
from policies.format import format_time

STDERR = "stderr"


class AuditLog:
    def __init__(self, destination: str, clock: Clock) -> None:
        self._path = None if destination == STDERR else destination
        self._clock = clock
        if self._path is not None:
            self._append("")  # a path that cannot be written fails the server's start, not its first admin action

    def write(
        self,
        who: Principal,
        action: str,
        target: Mapping[str, Any],
        *,
        status: int | None = None,
        error: str | None = None,
    ) -> None:
        """``error`` None: the action was done; else it was refused (``status``, the HTTP one, a 4xx) or it
        failed (a 5xx, or no status: the server's own error)."""
        now = self._clock.now()
        line = {
            "time": now,
            "at": format_time(now),
            "who": who.display,
            "token": who.token_id,
            "action": action,
            "target": dict(target),
            "result": "ok" if error is None else "refused" if status is not None and status < 500 else "failed",
            **({} if status is None else {"status": status}),
            **({} if error is None else {"error": error}),
        }
        self._append(json.dumps(line) + "\n")

    def _append(self, text: str) -> None:
        if self._path is None:
            sys.stderr.write(text)  # whatever stderr is now (a test runner swaps it)
            sys.stderr.flush()
            return
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(text)
