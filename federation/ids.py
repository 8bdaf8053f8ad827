"""Job ids that sort by submit time (like ULIDs), so listings come out in submit order for free."""

from __future__ import annotations

import secrets

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


def new_job_id(now: float) -> str:
    """10 characters of milliseconds, then 6 random ones: unique across API replicas."""
    return _base32(int(now * 1000), 9) + _base32(secrets.randbits(30), 6)
