"""Bulk reads and writes: etcd's throughput comes from full txns with a few in flight, not from single
requests one after another."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from federation.store.base import Store, payload_bytes
from federation.store.errors import RequestTooLarge
from federation.store.types import KeyValue, Op, TxnResponse, TxnResult

MAX_BATCH_BYTES = 1 << 20
"""What one batched txn carries at most: below etcd's 1.5 MiB request limit (``MAX_REQUEST_BYTES``),
with room for the key prefix, compares and framing. Every writer that batches goes by it (``batches``)."""

G = TypeVar("G")


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
        puts = (Op.put(key, value) for key, value in items)
        for batch in batches(puts, lambda op: (op,), store.max_txn_ops, max_batch_bytes):
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
    """Reads in txns of up to ``store.max_txn_ops`` ops; a txn whose answer is over gRPC's receive limit
    (128 large records can be) is asked again in halves, so no size of record makes a read fail."""
    if in_flight < 1:
        raise ValueError("in_flight must be at least 1")
    size = store.max_txn_ops
    gate = asyncio.Semaphore(in_flight)

    async def read(chunk: Sequence[Op]) -> list[TxnResponse]:
        async with gate:
            try:
                return (await store.txn((), chunk)).responses
            except RequestTooLarge:
                if len(chunk) == 1:
                    raise
        half = len(chunk) // 2
        return [*await read(chunk[:half]), *await read(chunk[half:])]

    chunks = await asyncio.gather(*(read(ops[i : i + size]) for i in range(0, len(ops), size)))
    return [value for chunk in chunks for value in chunk]


def _last_revision(done: set[asyncio.Task[TxnResult]]) -> int:
    errors = [task.exception() for task in done]
    for error in errors:
        if error is not None:
            raise error
    return max(task.result().revision for task in done)


def batches(
    groups: Iterable[G], ops_of: Callable[[G], Sequence[Op]], max_ops: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[list[G]]:
    """The groups in order, in as few batches as keep each within ``max_ops`` ops and ``max_bytes`` of
    payload (``payload_bytes``), a group never split: one over either bound is a batch of its own, which
    the store refuses (``RequestTooLarge``) only if it is over the request limit itself."""
    batch: list[G] = []
    ops = size = 0
    for group in groups:
        group_ops = ops_of(group)
        cost = payload_bytes(group_ops)
        if batch and (ops + len(group_ops) > max_ops or size + cost > max_bytes):
            yield batch
            batch, ops, size = [], 0, 0
        batch.append(group)
        ops += len(group_ops)
        size += cost
    if batch:
        yield batch
