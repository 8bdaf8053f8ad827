"""Raw store write throughput, for benches that report their own rate against it in the same run.

The targets in DESIGN section 4 are ratios to "raw etcd batched-txn throughput measured in the same
run"; measuring it with the same ``put_many`` path every component uses keeps that ratio honest.
Bench scripts run as ``.venv/bin/python bench/<name>.py`` (which puts bench/ on sys.path) import it as::

    from etcd_raw import raw_txn_put_rate
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from federation.store import Compare, Op, Store, put_many

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


async def raw_change_rate(
    store: Store, n: int, template: Sequence[Op], per_txn: int, in_flight: int = IN_FLIGHT
) -> float:
    """Items/s writing ``n`` items shaped like ``template`` (one ``mod_revision`` compare per item, then
    the template's puts and deletes with the same value sizes), ``per_txn`` items per txn, ``in_flight``
    txns at a time: etcd's own throughput for a component's writes, without the component.

    The guarded keys and the keys to delete are written first (not timed); everything is removed after.
    """
    prefix = f"bench/change/{uuid.uuid4().hex}/"
    setup = [(f"{prefix}{i:08d}/{k}", b"x" * len(op.value)) for i in range(n) for k, op in enumerate(template)]
    await put_many(store, setup, in_flight=in_flight)
    revisions = {kv.key: kv.mod_revision for kv in await store.range(prefix)}

    def item(i: int) -> tuple[Compare, list[Op]]:
        guard = f"{prefix}{i:08d}/0"
        ops = [
            Op.delete(f"{prefix}{i:08d}/{k}") if op.kind == "delete" else Op.put(f"{prefix}{i:08d}/{k}", op.value)
            for k, op in enumerate(template)
        ]
        return Compare.mod_revision(guard, "==", revisions[guard]), ops

    items = [item(i) for i in range(n)]
    gate = asyncio.Semaphore(in_flight)

    async def send(batch: list[tuple[Compare, list[Op]]]) -> None:
        async with gate:
            result = await store.txn([c for c, _ in batch], [op for _, ops in batch for op in ops], [])
            if not result.succeeded:
                raise RuntimeError("a raw change txn failed its compares")

    started = time.perf_counter()
    await asyncio.gather(*(send(items[i : i + per_txn]) for i in range(0, n, per_txn)))
    elapsed = time.perf_counter() - started
    await store.txn((), [Op.delete_prefix(prefix)])
    return n / elapsed
