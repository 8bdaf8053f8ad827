"""Job ids that sort by submit time (like ULIDs), so listings come out in submit order for free."""

from __future__ import annotations

import os
import threading

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
DEFAULT_TASK = "main"
"""The name of a task given none (here, not in the models, so ``fedq job`` reads it without pydantic)."""


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


class _Monotonic:
    """Ids from one process sort in the order they were made, even within one millisecond."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def next(self, now: float) -> str:
        ms = int(now * 1000)
        with self._lock:
            if ms <= self._last_ms:
                ms = self._last_ms
                self._last_random += 1
            else:
                self._last_random = (
                    int.from_bytes(os.urandom(4)) >> 3
                )  # 29 random bits (secrets' import: ~6 ms of `fedq job`)
            self._last_ms = ms
            return _base32(ms, 9) + _base32(self._last_random, 6)


_ids = _Monotonic()


def new_job_id(now: float) -> str:
    """9 characters of milliseconds, then 6 of a per-millisecond random start that counts up:
    unique across API replicas, and in submit order within one."""
    return _ids.next(now)
