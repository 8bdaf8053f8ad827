"""etcd's size limits as the store meets them: ranges over large records read in pages sized by bytes,
and a request too large or a full backend come out as errors a caller can act on (not ValueError)."""

from __future__ import annotations

import asyncio

import pytest

from federation.store import (
    EtcdServer,
    EtcdStore,
    MemoryStore,
    Op,
    RequestTooLarge,
    StoreFull,
    get_many,
    put_many,
)
from federation.store.base import MAX_REQUEST_BYTES
from policies.clock import SystemClock

pytestmark = pytest.mark.etcd

MIB = 1024 * 1024


async def test_a_range_over_more_than_grpcs_receive_limit_reads_whole(private_etcd: EtcdServer) -> None:
    """70 records of 1 MiB: one page of them would be over the client's 64 MiB receive limit."""
    store = EtcdStore(private_etcd.connection)
    items = [(f"jobs/{i:03d}", bytes([i]) * MIB) for i in range(70)]
    await put_many(store, items, max_batch_bytes=MIB + 64)

    kvs = await store.range("jobs/")

    assert [kv.key for kv in kvs] == [key for key, _ in items]
    assert all(kv.value == value for kv, (_, value) in zip(kvs, items, strict=True))
    await store.close()


async def test_get_many_over_more_than_grpcs_receive_limit_reads_whole(private_etcd: EtcdServer) -> None:
    """70 records of 1 MiB: one txn of their 70 gets would answer over the client's 64 MiB receive limit
    (the txns of ``store.max_txn_ops`` gets could, with large records); it is asked again in halves."""
    store = EtcdStore(private_etcd.connection)
    items = [(f"jobs/{i:03d}", bytes([i]) * MIB) for i in range(70)]
    await put_many(store, items, max_batch_bytes=MIB + 64)

    found = await get_many(store, [key for key, _ in items])

    assert [kv.value if kv is not None else None for kv in found] == [value for _, value in items]
    await store.close()


@pytest.mark.parametrize("size", [MIB + MIB // 2 + 1024, 5 * MIB // 2], ids=["over-etcds-limit", "over-grpcs-limit"])
async def test_a_request_over_etcds_limit_is_request_too_large(
    etcd_server: EtcdServer, store_prefix: str, size: int
) -> None:
    """etcd refuses over 1.5 MiB itself, and its gRPC server over 2 MiB: both are RequestTooLarge (a put:
    a txn that large is refused before it is sent)."""
    store = EtcdStore(etcd_server.connection, prefix=store_prefix)
    with pytest.raises(RequestTooLarge):
        await store.put("big/0", b"x" * size)
    assert await store.range("big/") == []
    await store.close()


@pytest.mark.parametrize("backend", ["memory", "etcd"])
async def test_a_txn_over_etcds_request_limit_is_refused_alike_before_it_is_sent(
    etcd_server: EtcdServer, store_prefix: str, backend: str
) -> None:
    """Both backends refuse a txn whose keys and values are over ``MAX_REQUEST_BYTES``, and write nothing
    of it, so code run on the memory store meets the limit it will meet on etcd."""
    store = MemoryStore() if backend == "memory" else EtcdStore(etcd_server.connection, prefix=store_prefix)
    ops = [Op.put(f"big/{i}", b"x" * 512 * 1024) for i in range(3)]
    with pytest.raises(RequestTooLarge, match=str(MAX_REQUEST_BYTES)):
        await store.txn([], ops)
    assert await store.range("big/") == []
    await store.close()


async def test_a_full_backend_is_store_full_and_still_serves_reads() -> None:
    with EtcdServer(clock=SystemClock(), quota_backend_bytes=16 * MIB) as etcd:
        store = EtcdStore(etcd.connection)
        await store.put("kept", b"v")
        with pytest.raises(StoreFull):
            for i in range(64):
                await store.put(f"fill/{i}", b"x" * MIB)
        kept = await store.get("kept")
        assert kept is not None and kept.value == b"v"
        await store.close()


async def test_the_size_grows_with_what_is_written(private_etcd: EtcdServer) -> None:
    store = EtcdStore(private_etcd.connection)
    before = await store.size()
    await put_many(store, [(f"grow/{i}", b"x" * 64 * 1024) for i in range(64)])
    async with asyncio.timeout(10):
        while await store.size() < before + 2 * MIB:  # etcd's backend commits every 100 ms: no event to wait on
            await asyncio.sleep(0.05)
    await store.close()


async def test_the_memory_stores_size_is_its_live_keys_and_values() -> None:
    store = MemoryStore()
    await store.put("a", b"12345")
    await store.put("a", b"12")
    await store.put("bb", b"x")
    await store.delete("bb")
    assert await store.size() == len("a") + 2
    await store.close()
