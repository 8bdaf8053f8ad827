"""Records just under the size limit (issue 33, point 1): one tenant's jobs of about 240 KiB each, every one
admissible under ``api.maxRecordBytes``, must not stop scheduling for anyone. Before, the scheduler
batched its changes by op count alone, so a dispatch of 30 such jobs was one 7.9 MB txn that etcd refused
(its gRPC limit is 2 MiB) every cycle, and nothing started for any tenant.

The real scheduler loop (``SchedulerService.run``) on a real etcd, a single member and the three-member
cluster, with a simulated cluster reporting through the federation's own report handler (the harness of
``tests/scheduler``, its clock moved by the test). Every txn sent is measured on its way to etcd.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from federation.config import FederationConfig
from federation.jobs import expand
from federation.models import JobManifest, JobState
from federation.store import EtcdCluster, EtcdServer, EtcdStore, Op, RequestTooLarge, Store
from tests.scheduler.harness import Harness

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

BLOB = 240 * 1024  # bytes of env per job: the record is just under the default 256 KiB limit
# All fit the cluster at once, so one cycle dispatches them all: by op count, 31 dispatches a txn, so
# every txn of the old batching held at least 9 of these records (2.2 MB), whatever the plan's order.
BIG_JOBS = 40
SMALL_JOBS = 4
QUEUES = {"queues": [{"name": "a"}, {"name": "b"}]}
CONFIG = {"cyclePeriod": "200ms", "cluster": {"lostAfter": "1h", "requeueAfter": "1h"}}
NODES = [{"count": 20, "resources": {"cpu": 4}}]  # 80 cpus: room for every job
START_WITHIN = 25.0  # real seconds for every job to be Running


class Measured:
    """The store, noting the payload of each txn sent (keys and values) and each one etcd refused as too large."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.largest = 0
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        self.largest = max(self.largest, sum(len(op.key) + len(op.value) for op in success))
        try:
            return await self.store.txn(compares, success, failure)
        except RequestTooLarge:
            self.refused += 1
            raise


def _manifest(name: str, queue: str, blob: int) -> JobManifest:
    env = {"BLOB": "x" * blob} if blob else {}
    task = {"replicas": 1, "resources": {"cpu": 1}, "runtime": 3600, "env": env}
    return JobManifest.model_validate(
        {"metadata": {"name": name}, "spec": {"queue": queue, "walltime": 3600, "tasks": [task]}}
    )


@contextlib.asynccontextmanager
async def _looping(h: Harness) -> AsyncIterator[None]:
    """The scheduler's own loop, with the simulated cluster reporting every 100 ms (the clock moving as much)."""
    stop = asyncio.Event()
    loop = asyncio.create_task(h.service.run(stop))

    async def reporting() -> None:
        while not stop.is_set():
            h.clock.advance(0.1)
            for agent in h.agents.values():
                await h._report(agent)
            await asyncio.sleep(0.1)

    agents = asyncio.create_task(reporting())
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(loop, agents), 30)


async def _jobs_of_240_kib_do_not_stop_scheduling(store: Measured) -> None:
    h = Harness(store, CONFIG, QUEUES)  # type: ignore[arg-type]  # Measured passes every call on
    limit = FederationConfig().api.max_record_bytes
    await h.start()
    await h.join("c1", NODES)
    big = [record for i in range(BIG_JOBS) for record in expand(_manifest(f"big-{i}", "a", BLOB), "bob", h.clock.now())]
    size = len(big[0].to_bytes())
    assert size <= limit, f"a record of {size} bytes would be refused at submit (limit {limit})"
    async with _looping(h):
        await h.jobs.create(big)
        small = [r for i in range(SMALL_JOBS) for r in expand(_manifest(f"small-{i}", "b", 0), "carol", h.clock.now())]
        await h.jobs.create(small)
        started = time.monotonic()
        running: dict[str, int] = {}
        while time.monotonic() - started < START_WITHIN:
            states = [(await h.job(r.id)).state for r in (*big, *small)]
            running = {
                "bob": sum(s is JobState.RUNNING for s in states[:BIG_JOBS]),
                "carol": sum(s is JobState.RUNNING for s in states[BIG_JOBS:]),
            }
            if running == {"bob": BIG_JOBS, "carol": SMALL_JOBS}:
                break
            await asyncio.sleep(0.25)
        took = time.monotonic() - started
    figures = (
        f"records of {size} bytes (limit {limit}); largest txn {store.largest} bytes; {store.refused} txns refused "
        f"as too large; after {took:.1f}s running: bob {running['bob']}/{BIG_JOBS}, "
        f"carol {running['carol']}/{SMALL_JOBS}"
    )
    print(figures)
    assert running == {"bob": BIG_JOBS, "carol": SMALL_JOBS}, figures
    assert store.refused == 0, figures


async def test_jobs_just_under_the_record_limit_do_not_stop_scheduling(
    etcd_server: EtcdServer, store_prefix: str
) -> None:
    etcd = EtcdStore(etcd_server.connection, prefix=store_prefix)
    try:
        await _jobs_of_240_kib_do_not_stop_scheduling(Measured(etcd))
    finally:
        await etcd.close()


async def test_jobs_just_under_the_record_limit_do_not_stop_scheduling_on_three_members(
    etcd_cluster: EtcdCluster,
) -> None:
    etcd = EtcdStore(etcd_cluster.connection, prefix="/fedq/big/")
    try:
        await _jobs_of_240_kib_do_not_stop_scheduling(Measured(etcd))
    finally:
        await etcd.close()
