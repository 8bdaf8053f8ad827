"""Bulk reads and writes: etcd's throughput comes from full txns with a few in flight, not from single
requests one after another."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence

from federation.store.base import Store
from federation.store.types import KeyValue, Op, TxnResponse, TxnResult

MAX_BATCH_BYTES = 1 << 20
"""Below etcd's 1.5 MiB request limit, with room for keys and framing."""


async def put_many(
    store: Store,
    items: Iterable[tuple[str, bytes]],
    *,
    in_flight: int = 4,
    max_batch_bytes: int = MAX_BATCH_BYTES,
) -> int:
    """Write all items in txns of up to ``store.max_txn_ops`` puts; return the last revision.

    Not atomic as a whole: if a txn fails, the batches before it stay written and the error is raised.
    """
    if in_flight < 1:
        raise ValueError("in_flight must be at least 1")
    pending: set[asyncio.Task[TxnResult]] = set()
    revision = 0
    try:
        for batch in _batches(items, store.max_txn_ops, max_batch_bytes):
            if len(pending) >= in_flight:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                revision = max(revision, _last_revision(done))
            pending.add(asyncio.create_task(store.txn((), batch)))
        if pending:
            done, pending = await asyncio.wait(pending)
            revision = max(revision, _last_revision(done))
    finally:
        for task in pending:
            task.cancel()
    return revision or await store.revision()


async def get_many(store: Store, keys: Sequence[str], *, in_flight: int = 4) -> list[KeyValue | None]:
    """The values of ``keys`` (None where missing), in their order: reads in txns of up to
    ``store.max_txn_ops`` gets, each txn at one revision (the whole set is not one snapshot)."""
    values = await _read_many(store, [Op.get(key) for key in keys], in_flight)
    return [value if isinstance(value, KeyValue) else None for value in values]


async def count_many(store: Store, prefixes: Sequence[str], *, in_flight: int = 4) -> list[int]:
    """How many keys start with each of ``prefixes``, in their order, counted by the store without
    reading them: txns of up to ``store.max_txn_ops`` counts, each at one revision."""
    counts = await _read_many(store, [Op.count(prefix) for prefix in prefixes], in_flight)
    return [count if isinstance(count, int) else 0 for count in counts]


async def _read_many(store: Store, ops: Sequence[Op], in_flight: int) -> list[TxnResponse]:
    if in_flight < 1:
        raise ValueError("in_flight must be at least 1")
    size = store.max_txn_ops
    gate = asyncio.Semaphore(in_flight)

    async def read(chunk: Sequence[Op]) -> list[TxnResponse]:
        async with gate:
            return (await store.txn((), chunk)).responses

    chunks = await asyncio.gather(*(read(ops[i : i + size]) for i in range(0, len(ops), size)))
    return [value for chunk in chunks for value in chunk]


def _last_revision(done: set[asyncio.Task[TxnResult]]) -> int:
    errors = [task.exception() for task in done]
    for error in errors:
        if error is not None:
            raise error
    return max(task.result().revision for task in done)


def _batches(items: Iterable[tuple[str, bytes]], max_ops: int, max_bytes: int) -> Iterator[list[Op]]:
    batch: list[Op] = []
    size = 0
    for key, value in items:
        cost = len(key) + len(value)
        if batch and (len(batch) >= max_ops or size + cost > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(Op.put(key, value))
        size += cost
    if batch:
        yield batch
