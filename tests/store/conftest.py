"""Fixtures for the store suites: a second client of the same store, a private etcd to restart, and a
three-member etcd cluster whose members a test may kill."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from federation.store import EtcdCluster, EtcdServer, EtcdStore, MemoryStore, Store
from policies.clock import SystemClock


@pytest.fixture
async def other_client(store: Store, store_prefix: str, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """Another client of the same data: a second etcd connection, or the same in-process store."""
    if isinstance(store, MemoryStore):
        yield store
        return
    server: EtcdServer = request.getfixturevalue("etcd_server")
    client = EtcdStore(server.connection, prefix=store_prefix)
    yield client
    await client.close()


@pytest.fixture
def private_etcd() -> Iterator[EtcdServer]:
    """An etcd of the test's own (TLS and auth, as the session's), for tests that stop or kill it."""
    with EtcdServer(clock=SystemClock()) as server:
        yield server


@pytest.fixture
def etcd_cluster() -> Iterator[EtcdCluster]:
    """Three etcd members of the test's own on free loopback ports (TLS and auth, a temp dir), any of
    which the test may SIGKILL and start again; every member is stopped and the dir removed at the end."""
    with EtcdCluster(3, clock=SystemClock()) as cluster:
        yield cluster
        cluster.stop(kill=True)  # no graceful leader hand-over to wait for: the data goes with the dir
