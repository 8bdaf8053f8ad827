"""Whether the scheduler's loop gets through its turns: what ``/healthz``, the metrics and ``fedq explain``
say when it does not. A loop that fails every turn (the store refusing its writes, say) schedules
nothing for anyone while the API still accepts jobs, so a log line alone told nobody.

One failed turn is no news (an etcd leader election costs one); ``FAILING_AFTER`` in a row is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FAILING_AFTER = 3
"""Failed turns in a row after which the loop counts as failing."""


@dataclass
class LoopHealth:
    failures: int = 0
    """Turns failed in a row (0 after a good one)."""
    error: str = ""
    """The last failure's error, kept until a good turn."""
    since: float | None = None
    """When the first of the failures in a row happened."""
    last_good: float | None = None

    @property
    def failing(self) -> bool:
        return self.failures >= FAILING_AFTER

    def failed(self, error: str, now: float) -> bool:
        """Note a failed turn; True when this one makes the loop failing (the moment to tell)."""
        if not self.failures:
            self.since = now
        self.failures += 1
        self.error = error
        return self.failures == FAILING_AFTER

    def succeeded(self, now: float) -> int:
        """Note a good turn; returns how many failed turns in a row it ends."""
        ended = self.failures
        self.failures, self.error, self.since, self.last_good = 0, "", None, now
        return ended

    def view(self) -> dict[str, Any]:
        """What ``/healthz`` shows and the leader publishes while failing (times in epoch seconds)."""
        return {
            "ok": not self.failing,
            "failures": self.failures,
            "error": self.error,
            "since": self.since,
            "last_good": self.last_good,
        }
