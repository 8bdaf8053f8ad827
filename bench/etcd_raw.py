"""Raw store write throughput, for benches that report their own rate against it in the same run.

The targets in DESIGN section 4 are ratios to "raw etcd batched-txn throughput measured in the same
run"; measuring it with the same ``put_many`` path every component uses keeps that ratio honest.
Bench scripts run as ``.venv/bin/python bench/<name>.py`` (which puts bench/ on sys.path) import it as::

    from etcd_raw import raw_txn_put_rate
"""

from __future__ import annotations

import time
import uuid

from federation.store import Op, Store, put_many

RECORD_BYTES = 512
IN_FLIGHT = 4


def records(prefix: str, count: int, value_size: int = RECORD_BYTES) -> list[tuple[str, bytes]]:
    """``count`` records of ``value_size`` bytes under ``prefix``, in key order."""
    value = b"x" * value_size
    return [(f"{prefix}{i:08d}", value) for i in range(count)]


async def raw_txn_put_rate(store: Store, n: int, value_size: int = RECORD_BYTES) -> float:
    """Puts/s writing ``n`` records in full txns, ``IN_FLIGHT`` at a time; the records are deleted after."""
    prefix = f"bench/raw/{uuid.uuid4().hex}/"
    items = records(prefix, n, value_size)
    started = time.perf_counter()
    await put_many(store, items, in_flight=IN_FLIGHT)
    elapsed = time.perf_counter() - started
    await store.txn((), [Op.delete_prefix(prefix)])
    return n / elapsed


async def sequential_put_rate(store: Store, n: int, value_size: int = RECORD_BYTES) -> float:
    """Puts/s writing ``n`` records one acknowledged put at a time; the records are deleted after."""
    prefix = f"bench/seq/{uuid.uuid4().hex}/"
    items = records(prefix, n, value_size)
    started = time.perf_counter()
    for key, value in items:
        await store.put(key, value)
    elapsed = time.perf_counter() - started
    await store.txn((), [Op.delete_prefix(prefix)])
    return n / elapsed
