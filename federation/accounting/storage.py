"""Where the accounting lives in the store, and its compact JSON.

- ``usage/queues``: every queue's meter, and the accounting clock;
- ``usage/tenants/<tenant>``: the tenant's meter, priority factor, its series' meters, and how many
  run chunks it has;
- ``usage/runs/<tenant>/<n>``: the tenant's running jobs, in chunks well under etcd's 1.5 MiB;
- ``history/<tenant>/<queue>/<cluster>``: one series' downsampled buckets.

One document per tenant (and per series) keeps each value small and lets a save rewrite only the
tenants that changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from federation import keys

QUEUES = f"{keys.USAGE}queues"
TENANTS = f"{keys.USAGE}tenants/"
RUNS = f"{keys.USAGE}runs/"
MAX_CHUNK_BYTES = 256 * 1024
"""Running-job chunks stay far below etcd's request limit, so several fit in one batched txn."""


def tenant_key(tenant: str) -> str:
    return f"{TENANTS}{tenant}"


def runs_key(tenant: str, chunk: int) -> str:
    return f"{RUNS}{tenant}/{chunk}"


def history_key(tenant: str, queue: str, cluster: str) -> str:
    return f"{keys.HISTORY}{tenant}/{queue}/{cluster}"


def parse_history_key(key: str) -> tuple[str, str, str]:
    tenant, queue, cluster = key.removeprefix(keys.HISTORY).split("/")
    return tenant, queue, cluster


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def chunked(rows: Iterable[Any], max_bytes: int = MAX_CHUNK_BYTES) -> Iterator[bytes]:
    """JSON arrays of ``rows``, each encoded under ``max_bytes`` (a single bigger row stands alone)."""
    parts: list[bytes] = []
    size = 2
    for row in rows:
        encoded = dumps(row)
        if parts and size + len(encoded) + 1 > max_bytes:
            yield b"[" + b",".join(parts) + b"]"
            parts, size = [], 2
        parts.append(encoded)
        size += len(encoded) + 1
    if parts:
        yield b"[" + b",".join(parts) + b"]"
