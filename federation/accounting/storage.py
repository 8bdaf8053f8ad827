"""Where the accounting lives in the store, and its compact JSON.

- ``usage/queues``: every queue's meter, and the accounting clock;
- ``usage/tenants/<tenant>``: the tenant's meter, priority factor, its series' meters, and how many
  run chunks it has;
- ``usage/runs/<tenant>/<n>``: the tenant's running jobs, in chunks well under etcd's 1.5 MiB;
- ``usage-history/<tenant>/<queue>/<cluster>/<tier width>/<chunk start>``: a chunk of one series'
  downsampled buckets (an hour of minutes, a day of hours, a year of days).

Small documents let a save rewrite only what changed: the tenants that ran or changed, the run
chunks of tenants that started or stopped jobs, and the history chunks that gained usage or were
downsampled. A tenant's writes go in one txn where they fit, so a chunk moved into a coarser one is
never stored twice nor lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from federation import keys
from federation.store import Op, Store
from federation.store.base import payload_bytes
from federation.store.bulk import MAX_BATCH_BYTES, batches

QUEUES = f"{keys.USAGE}queues"
TENANTS = f"{keys.USAGE}tenants/"
RUNS = f"{keys.USAGE}runs/"
MAX_CHUNK_BYTES = 256 * 1024
"""Running-job chunks stay far below etcd's request limit, so several fit in one batched txn."""


def tenant_key(tenant: str) -> str:
    return f"{TENANTS}{tenant}"


def runs_key(tenant: str, chunk: int) -> str:
    return f"{RUNS}{tenant}/{chunk}"


def history_key(tenant: str, queue: str, cluster: str, width: float, chunk: float) -> str:
    return f"{keys.HISTORY}{tenant}/{queue}/{cluster}/{width:.17g}/{chunk:.17g}"


def parse_history_key(key: str) -> tuple[tuple[str, str, str], float, float]:
    """((tenant, queue, cluster), tier width, chunk start) of a history key."""
    tenant, queue, cluster, width, chunk = key.removeprefix(keys.HISTORY).split("/")
    return (tenant, queue, cluster), float(width), float(chunk)


async def write_groups(store: Store, groups: Iterable[Sequence[Op]], max_bytes: int = MAX_BATCH_BYTES) -> int:
    """Run the ops in as few txns as fit etcd's limits, never splitting a group that fits in one
    (a group larger than one txn goes in several); returns the last revision."""
    max_ops = store.max_txn_ops

    def fitting() -> Iterator[Sequence[Op]]:
        for group in groups:
            if len(group) <= max_ops and payload_bytes(group) <= max_bytes:
                yield group
            else:  # in as few txns as it fills
                yield from batches(group, lambda op: (op,), max_ops, max_bytes)

    revision = 0
    for batch in batches(fitting(), lambda group: group, max_ops, max_bytes):
        revision = (await store.txn((), [op for group in batch for op in group])).revision
    return revision or await store.revision()


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
