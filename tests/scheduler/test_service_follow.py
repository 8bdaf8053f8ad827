"""The leader's in-memory state keeps following the store, or is dropped and reloaded; never left stale."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from federation import keys
from federation.auth import Role, TokenStore
from federation.clusters import ClusterService
from federation.config import FederationConfig
from federation.jobs import JobRepository, expand
from federation.models import JobManifest, JobRecord, JobState, QueueTreeConfig
from federation.models.cluster import ClusterReport, JoinRequest, NodeReport
from federation.scheduler import service as service_module
from federation.scheduler.service import NotFollowing, SchedulerService
from federation.store import Compare, MemoryStore, Op, StoreError, StoreUnavailable, TxnResult, WatchEvent
from policies.clock import ManualClock
from tests.jobflow import dispatch, report

GUARD = 10.0  # seconds before a hung wait fails the test instead of hanging it


class FlakyStore(MemoryStore):
    """A memory store whose watches fail with a store error on their next event while ``broken``."""

    broken = False

    async def watch(
        self, prefix: str, *, start_revision: int | None = None, end: str | None = None, previous: bool = True
    ) -> AsyncGenerator[WatchEvent, None]:
        async for event in super().watch(prefix, start_revision=start_revision, end=end, previous=previous):
            if self.broken:
                raise StoreError("connection to the store lost")
            yield event


async def leading(store: MemoryStore, clock: ManualClock) -> SchedulerService:
    tree = QueueTreeConfig.model_validate({"queues": [{"name": "a", "tenants": ["alice"]}]})
    await store.put(keys.QUEUES, tree.model_dump_json(by_alias=True).encode())
    service = SchedulerService(store, FederationConfig(), clock, save_every=float("inf"))
    await service.follow()
    assert await service.lead()
    return service


async def submit(store: MemoryStore, clock: ManualClock, name: str) -> str:
    manifest = JobManifest.model_validate(
        {"metadata": {"name": name}, "spec": {"queue": "a", "tasks": [{"replicas": 1, "resources": {"cpu": 1}}]}}
    )
    records = expand(manifest, "alice", clock.now())
    await JobRepository(store).create(records)
    return records[0].id


async def test_a_value_it_cannot_read_is_logged_and_skipped_and_the_watch_goes_on() -> None:
    clock = ManualClock(1000.0)
    store = MemoryStore(clock=clock)
    service = await leading(store, clock)
    with capture_logs() as logs:
        await store.put(keys.report("ghost"), b'{"time": "soon", "report": {}}')
        job = await submit(store, clock, "after-the-bad-value")
        await asyncio.wait_for(service.sync(), GUARD)
    assert service.state is not None and job in service.state.entries
    assert "ghost" not in service.state.clusters
    assert [entry["key"] for entry in logs if entry["log_level"] == "error"] == [keys.report("ghost")]
    await service.close()


async def flaky_leader() -> tuple[ManualClock, FlakyStore, SchedulerService, asyncio.Task[None]]:
    """A leader over a store whose watch can be broken, and its watch task."""
    clock = ManualClock(1000.0)
    store = FlakyStore(clock=clock)
    service = await leading(store, clock)
    watch = service._watch
    assert watch is not None
    return clock, store, service, watch


async def test_a_dead_watch_drops_the_state_until_a_reload() -> None:
    clock, store, service, watch = await flaky_leader()
    service.accountant.set_factor("alice", 3.0)  # in memory only: not saved yet
    store.broken = True
    job = await submit(store, clock, "while-the-watch-dies")
    await asyncio.wait_for(watch, GUARD)
    assert service.state is None  # not scheduled from while stale
    with pytest.raises(NotFollowing):
        await service.sync()  # no state at all: nothing to wait for

    store.broken = False
    await service.follow()
    assert service.state is not None and job in service.state.entries
    assert service.accountant.usage().tenant_factor == {"alice": 3.0}  # the reload kept this leadership's accounting
    await asyncio.wait_for(service.sync(), GUARD)
    await service.close()


async def reloaded_after_an_unseen_run(last: JobState, compacted: bool = False, **fields: Any) -> SchedulerService:
    """A leader whose watch dies while a job is dispatched, runs from 1010 s and moves to ``last`` at
    1040 s (``fields`` are set then); the watch comes back and the state is reloaded at 1100 s, with
    the store's history of all that compacted away if ``compacted``."""
    clock, store, service, watch = await flaky_leader()
    store.broken = True
    job = await submit(store, clock, "runs-unseen")
    await asyncio.wait_for(watch, GUARD)
    jobs = JobRepository(store)
    await dispatch(jobs, job, "c1", 1000.0)
    await report(jobs, job, JobState.RUNNING, 1010.0)
    await report(jobs, job, last, 1040.0)
    clock.set(1100.0)
    if compacted:
        await store.compact(await store.revision())
    store.broken = False
    await service.follow()
    return service


async def test_a_run_that_started_and_ended_while_the_watch_was_dead_is_counted_after_the_reload() -> None:
    service = await reloaded_after_an_unseen_run(JobState.SUCCEEDED)
    assert not service.accountant.running()
    assert service.accountant.snapshot().tenants["alice"].seconds == {"cpu": 30.0}  # 1 cpu, 1010 s to 1040 s
    await service.close()


async def test_with_the_history_compacted_a_run_that_ended_while_the_watch_was_dead_is_counted_from_its_record() -> (
    None
):
    service = await reloaded_after_an_unseen_run(JobState.SUCCEEDED, compacted=True)
    assert not service.accountant.running()
    assert service.accountant.snapshot().tenants["alice"].seconds == {"cpu": 30.0}
    await service.close()


async def test_a_run_that_went_back_to_the_queue_while_the_watch_was_dead_is_counted_after_the_reload() -> None:
    service = await reloaded_after_an_unseen_run(JobState.PENDING)
    assert not service.accountant.running()
    assert service.accountant.snapshot().tenants["alice"].seconds == {"cpu": 30.0}  # until its requeue
    await service.close()


async def test_with_the_history_compacted_a_run_that_restarted_while_the_watch_was_dead_is_counted_as_two_runs() -> (
    None
):
    """The leader counted a run from 1010 s; while its watch is dead the job goes back to the queue at
    1040 s and runs again from 1060 s. The reload stops the counted run at the requeue and counts the
    new one from its start, not the gap between them."""
    clock, store, service, watch = await flaky_leader()
    job = await submit(store, clock, "restarts-unseen")
    jobs = JobRepository(store)
    await dispatch(jobs, job, "c1", 1000.0)
    await report(jobs, job, JobState.RUNNING, 1010.0)
    await asyncio.wait_for(service.sync(), GUARD)
    assert service.accountant.running() == {job}
    store.broken = True
    await report(jobs, job, JobState.PENDING, 1040.0)
    await asyncio.wait_for(watch, GUARD)
    await dispatch(jobs, job, "c1", 1050.0)
    await report(jobs, job, JobState.RUNNING, 1060.0)
    clock.set(1100.0)
    await store.compact(await store.revision())
    store.broken = False
    await service.follow()
    assert service.accountant.running() == {job}
    assert service.accountant.snapshot().tenants["alice"].seconds == {"cpu": 70.0}  # 1010-1040 s and 1060-1100 s
    await service.close()


class SilentStore(MemoryStore):
    """A memory store whose watches deliver nothing while ``silent``: a stream left open that no longer
    sends (they neither yield nor end)."""

    silent = False

    async def watch(
        self, prefix: str, *, start_revision: int | None = None, end: str | None = None, previous: bool = True
    ) -> AsyncGenerator[WatchEvent, None]:
        async for event in super().watch(prefix, start_revision=start_revision, end=end, previous=previous):
            if not self.silent:
                yield event


async def waiting_sync(service: SchedulerService) -> asyncio.Future[None]:
    """A sync that has written its mark and waits for it."""
    waiting = asyncio.ensure_future(service.sync())
    for _ in range(100):  # the memory store's put takes no real await: a few turns of the loop
        if service._syncs or waiting.done():
            return waiting
        await asyncio.sleep(0)
    raise AssertionError("the sync never waited")


@pytest.mark.parametrize(("fault", "said"), [("broken", "ended"), ("silent", "delivered nothing")])
async def test_a_sync_whose_watch_dies_or_falls_silent_fails_and_one_after_the_reload_returns(
    monkeypatch: pytest.MonkeyPatch, fault: str, said: str
) -> None:
    """The loop that syncs (a takeover's) is the one that would reload: a sync that waited for the
    reload held it for ever. It fails as a store error instead (as soon as the watch dies; after
    ``SYNC_WITHIN`` of a watch that delivers nothing), the state is dropped, and the next turn reloads."""
    monkeypatch.setattr(service_module, "SYNC_WITHIN", 0.05)
    clock = ManualClock(1000.0)
    store = FlakyStore(clock=clock) if fault == "broken" else SilentStore(clock=clock)
    service = await leading(store, clock)
    setattr(store, fault, True)

    with pytest.raises(StoreUnavailable, match=said):
        await asyncio.wait_for(service.sync(), GUARD)

    assert service.state is None
    setattr(store, fault, False)
    await service.follow()
    await asyncio.wait_for(service.sync(), GUARD)
    await service.close()


async def test_a_watch_that_dies_while_the_replica_takes_over_fails_that_turn_and_the_next_one_leads() -> None:
    """``lead`` syncs before it takes over; the turn waiting there is the loop's own, so before the sync
    was bounded it waited for ever while the lease keeper kept the lease: nothing was scheduled again."""
    clock = ManualClock(1000.0)
    store = FlakyStore(clock=clock)
    tree = QueueTreeConfig.model_validate({"queues": [{"name": "a", "tenants": ["alice"]}]})
    await store.put(keys.QUEUES, tree.model_dump_json(by_alias=True).encode())
    service = SchedulerService(store, FederationConfig(), clock, save_every=float("inf"))
    await service.follow()
    store.broken = True

    await asyncio.wait_for(service.turn_once(), GUARD)

    assert not service.leading and service.state is None
    assert service.health.view()["failures"] == 1
    store.broken = False
    await asyncio.wait_for(service.turn_once(), GUARD)
    assert service.leading
    await service.close()


async def test_closing_fails_a_waiting_sync_instead_of_leaving_it_hanging() -> None:
    clock = ManualClock(1000.0)
    store = SilentStore(clock=clock)
    service = await leading(store, clock)
    store.silent = True
    waiting = await waiting_sync(service)

    await service.close()

    with pytest.raises(NotFollowing):
        await asyncio.wait_for(waiting, GUARD)


class EchoFirstStore(MemoryStore):
    """A memory store whose guarded writes to job keys return only once ``follower`` has seen them on
    its watch: the order in which etcd may deliver a leader's own commit."""

    follower: SchedulerService | None = None
    echoed = 0

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        result = await super().txn(compares, success, failure)
        if self.follower is not None and compares and any(op.key.startswith(keys.JOBS) for op in success):
            await self.follower.sync()
            self.echoed += 1
        return result


async def test_its_own_commit_arriving_on_the_watch_first_is_applied_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock(1000.0)
    store = EchoFirstStore(clock=clock)
    service = await leading(store, clock)
    tokens = TokenStore(store, clock)
    clusters = ClusterService(store, JobRepository(store), tokens, clock)
    await clusters.join(JoinRequest(token=await tokens.issue(Role.JOIN, "c1"), name="c1"))
    node = NodeReport(name="n", allocatable={"cpu": 4.0}, free={"cpu": 4.0})
    await clusters.report("c1", ClusterReport(nodes=[node]))
    job = await submit(store, clock, "echoed")
    await asyncio.wait_for(service.sync(), GUARD)
    store.follower = service
    assert service.state is not None
    pending = service.state.entries[job].raw
    parsed: list[bytes] = []
    read = JobRecord.from_bytes

    def counted(data: bytes) -> JobRecord:
        parsed.append(data)
        return read(data)

    monkeypatch.setattr(JobRecord, "from_bytes", counted)
    plan = await asyncio.wait_for(service.cycle(), GUARD)

    assert plan.dispatches == [(job, "c1")]
    assert store.echoed == 1  # the watch applied the dispatch before the txn's reply came back
    assert parsed == [pending]  # read once, to build the dispatch; its echo is not read again
    stored = await JobRepository(store).get(job)
    entry = service.state.entries[job]
    assert (entry.state, entry.cluster, entry.revision, entry.raw) == (
        JobState.DISPATCHED,
        "c1",
        stored.revision,
        stored.record.to_bytes(),
    )
    await service.close()
