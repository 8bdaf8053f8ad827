"""TLS and etcd's authentication on a real etcd: who gets in, what they may touch, and tokens etcd forgets."""

from __future__ import annotations

import asyncio
import dataclasses
from operator import attrgetter

import grpc
import pytest
from aetcd import rpc

from federation.store import EtcdServer, EtcdStore, StoreError, StoreUnavailable
from federation.store.etcd_rpc import EtcdChannels
from policies.clock import SystemClock

from .support import take

pytestmark = pytest.mark.etcd

TOKEN_TTL = 1  # seconds etcd keeps an unused simple token (--auth-token-ttl)


async def test_the_user_reads_and_writes_under_its_prefixes_only(etcd_server: EtcdServer, store_prefix: str) -> None:
    mine = EtcdStore(etcd_server.connection, prefix=store_prefix)
    elsewhere = EtcdStore(etcd_server.connection, prefix="/elsewhere/")

    revision = await mine.put("k", b"v")
    kv = await mine.get("k")
    assert kv is not None and kv.mod_revision == revision
    with pytest.raises(StoreError, match="permission denied"):
        await elsewhere.put("k", b"v")
    with pytest.raises(StoreError, match="permission denied"):
        await elsewhere.range("")
    await mine.close()
    await elsewhere.close()


async def test_a_client_certificate_alone_is_the_user_its_common_name_names(
    etcd_server: EtcdServer, store_prefix: str
) -> None:
    by_cert = dataclasses.replace(etcd_server.connection, user=None, password=None)
    mine = EtcdStore(by_cert, prefix=store_prefix)
    elsewhere = EtcdStore(by_cert, prefix="/elsewhere/")

    await mine.put("k", b"v")
    with pytest.raises(StoreError, match="permission denied"):
        await elsewhere.put("k", b"v")
    await mine.close()
    await elsewhere.close()


async def test_a_wrong_password_is_refused_naming_the_user(etcd_server: EtcdServer, store_prefix: str) -> None:
    store = EtcdStore(dataclasses.replace(etcd_server.connection, password="not-it"), prefix=store_prefix)

    with pytest.raises(StoreError, match="refused user 'fedq'"):
        await store.get("k")
    await store.close()


@pytest.mark.parametrize("missing", ["ca", "client certificate", "tls"])
async def test_without_the_ca_a_client_certificate_or_tls_nothing_gets_through(
    etcd_server: EtcdServer, store_prefix: str, missing: str
) -> None:
    connection = etcd_server.connection
    if missing == "ca":
        connection = dataclasses.replace(connection, ca=None)  # the system's roots do not know the throwaway CA
    elif missing == "client certificate":
        connection = dataclasses.replace(connection, cert=None, key=None)  # etcd asks every client for one
    else:
        connection = dataclasses.replace(
            connection, tls=False, ca=None, cert=None, key=None, maintenance_cert=None, maintenance_key=None
        )
    store = EtcdStore(connection, prefix=store_prefix, connect_timeout=0.2, timeout=5.0)

    with pytest.raises(StoreUnavailable):
        await store.put("k", b"v")
    await store.close()


async def test_a_token_etcd_forgot_is_renewed_for_calls_and_for_watches() -> None:
    """etcd drops a simple token unused for its TTL (and a restarted member may not know it): a call
    is refused before it applies, so it is repeated once with a new token, even a write."""
    with EtcdServer(clock=SystemClock(), extra_args=[f"--auth-token-ttl={TOKEN_TTL}"]) as server:
        channels = EtcdChannels(server.connection, options={}, timeout=5.0)
        watcher = EtcdStore(server.connection)
        await watcher.put("w/0", b"authenticated")
        _, link, _ = await channels.ready()
        forgotten = link.token
        await asyncio.sleep(TOKEN_TTL + 2)  # etcd's own timer drops the tokens: no event to wait for

        request = rpc.PutRequest(key=b"/fedq/w/1", value=b"x")
        with pytest.raises(grpc.aio.AioRpcError, match="invalid auth token"):
            await link.kv.Put(request, metadata=link.metadata, timeout=5.0)
        events = watcher.watch("w/", start_revision=await watcher.revision() + 1)
        put = await channels.unary(attrgetter("kv.Put"), request, retry=False)

        assert link.token not in (None, forgotten)
        assert [(e.key, e.revision) for e in await take(events, 1)] == [("w/1", put.header.revision)]
        await channels.close()
        await watcher.close()
