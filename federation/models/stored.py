"""Reading back what fedq itself wrote: a record in the store passed every check when it was stored.

``JobRecord.from_bytes`` validates with ``STORED`` as its context, and the Python-level checks
(name and label patterns, quantity parsing, gang rules) return their input as is under it; pydantic's
own type and bound checks still run. About half of a record's parse is those checks, and the
scheduler parses a record for every dispatch and every job it loads.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationInfo

STORED: dict[str, Any] = {"stored": True}


def stored(info: ValidationInfo) -> bool:
    return info.context is STORED
