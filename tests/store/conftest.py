"""Fixtures for the store suites: a second client of the same store, and a private etcd to restart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from federation.store import EtcdServer, EtcdStore, MemoryStore, Store


@pytest.fixture
async def other_client(store: Store, store_prefix: str, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """Another client of the same data: a second etcd connection, or the same in-process store."""
    if isinstance(store, MemoryStore):
        yield store
        return
    server: EtcdServer = request.getfixturevalue("etcd_server")
    client = EtcdStore(server.endpoint, prefix=store_prefix)
    yield client
    await client.close()


@pytest.fixture
def private_etcd() -> Iterator[EtcdServer]:
    """An etcd of the test's own, for tests that stop or kill it."""
    with EtcdServer() as server:
        yield server
