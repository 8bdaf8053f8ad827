"""A scheduler harness per test on the session's real etcd, under a key prefix of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from federation.store import EtcdServer, EtcdStore
from tests.scheduler.harness import Harness

HarnessFactory = Callable[..., Any]


@pytest.fixture
async def make_harness(etcd_server: EtcdServer, store_prefix: str) -> AsyncIterator[HarnessFactory]:
    made: list[Harness] = []
    store = EtcdStore(etcd_server.connection, prefix=store_prefix)

    async def make(config: dict[str, Any], queues: dict[str, Any], start: float = 1_000_000.0) -> Harness:
        harness = Harness(store, config, queues, start)
        await harness.start()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()
    await store.close()
