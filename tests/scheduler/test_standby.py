"""Every replica follows the store; a stand-by takes over from its warm state, without a reload."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from federation import keys
from federation.jobs import JobRepository
from federation.models import JobState
from federation.scheduler.service import SchedulerService
from federation.store import Compare, Op, Store
from tests.jobflow import dispatch, report
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

QUEUES = {"queues": [{"name": "a"}]}
CPU4 = [{"count": 1, "resources": {"cpu": 4}}]


async def test_a_standby_follows_and_takes_over_from_its_warm_state(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, QUEUES)
    await h.join("c1", CPU4)
    running = await h.submit("t", cpu=1, runtime=1000)
    await h.tick()
    assert (await h.job(running)).state is JobState.RUNNING

    standby = SchedulerService(h.store, h.config, h.clock, save_every=0)
    try:
        assert await standby.step() is None  # follows, does not lead
        warm = standby.state
        assert warm is not None and running in warm.entries
        assert not standby.accountant.running()  # usage is the leader's to count

        waiting = await h.submit("t", cpu=2, runtime=100)
        await standby.sync()
        assert waiting in warm.entries and (await h.job(waiting)).state is JobState.PENDING

        await h.service.election.resign()  # the leader's lease ends
        await standby.sync()
        assert standby._wake.is_set()  # the leader key's deletion wakes the stand-by at once

        plan = await standby.step()
        assert plan is not None and standby.state is warm  # took over without reloading the store
        assert [job for job, _cluster in plan.dispatches] == [waiting]
        assert (await h.job(waiting)).state is JobState.DISPATCHED
        assert standby.accountant.running() == {running}  # the running job's usage is counted from here on

        assert await h.service.step() is None  # the old leader finds the lease taken and stands by
        assert not h.service.leading and h.service.state is not None
    finally:
        await standby.close()


class Interposer:
    """The store, with a hook run before a txn that reads ``key`` (the stand-by's catch-up reads)."""

    def __init__(self, store: Store, key: str, before: Callable[[], Awaitable[None]]) -> None:
        self.store = store
        self.key = key
        self.before: Callable[[], Awaitable[None]] | None = before

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        if self.before is not None and any(op.kind == "get" and op.key == self.key for op in success):
            before, self.before = self.before, None
            await before()
        return await self.store.txn(compares, success, failure)


async def end(h: Harness, job_id: str) -> None:
    """The job's end reaches the store, as its agent's report would write it."""
    await report(JobRepository(h.store), job_id, JobState.SUCCEEDED, h.clock.now())


async def test_with_the_history_compacted_a_job_ending_while_the_new_leader_reads_records_is_not_left_running(
    make_harness: HarnessFactory,
) -> None:
    """The fallback when the store's history since the save is gone: the jobs' records are read."""
    h = await make_harness({}, QUEUES)
    await h.join("c1", CPU4)
    ended_unsaved = await h.submit("t", cpu=1, runtime=1000)
    ends_meanwhile = await h.submit("t", cpu=1, runtime=1000)
    await h.tick()
    await h.tick()  # both run, and the leader's cycle saves its accounting with them running
    standby: SchedulerService | None = None

    async def meanwhile() -> None:  # while the new leader reads what it needs to catch up
        assert standby is not None
        await end(h, ends_meanwhile)
        await standby.sync()

    store = Interposer(h.store, keys.job(ended_unsaved), meanwhile)
    standby = SchedulerService(store, h.config, h.clock)
    try:
        await standby.step()
        await end(h, ended_unsaved)  # after the last save: the saved accounting still counts it
        await h.store.compact(await h.store.revision())  # no history to replay: records are read instead
        await h.service.election.resign()
        await standby.sync()
        assert await standby.step() is not None and standby.leading
        assert store.before is None  # the job ended while the new leader read the other one's record
        assert standby.accountant.running() == set()
    finally:
        await standby.close()


async def running_after_the_last_save(h: Harness) -> str:
    """A 2-cpu job that starts after the leader's last save (it saves no more after its first cycle)."""
    await h.join("c1", CPU4)
    await h.tick()  # the leader saves its (empty) accounting
    h.service.save_every = float("inf")  # and saves no more: what follows exists only in its memory
    job = await h.submit("t", cpu=2, runtime=100)
    await h.tick()
    await h.tick()
    assert (await h.job(job)).state is JobState.RUNNING
    return job


async def assert_the_new_leader_counts_as_the_old(
    h: Harness, cpu_seconds: float, running: set[str] | None = None, compacted: bool = False
) -> None:
    """A stand-by takes over (with the store's history gone if ``compacted``: it reads the jobs'
    records instead) and counts what the old leader counted live."""
    standby = SchedulerService(h.store, h.config, h.clock, save_every=0)
    try:
        await standby.step()
        if compacted:
            await h.store.compact(await h.store.revision())
        await h.service.election.resign()
        await standby.sync()
        assert await standby.step() is not None and standby.leading
        counted = standby.accountant.snapshot(h.clock.now()).tenants["t"]
        seen = h.service.accountant.snapshot(h.clock.now()).tenants["t"]
        assert counted.seconds == seen.seconds == {"cpu": cpu_seconds}
        assert counted.rup == seen.rup
        assert standby.accountant.running() == (running or set())
    finally:
        await standby.close()


async def requeue(h: Harness, job_id: str) -> None:
    """The job's cluster hands it back to the queue now, as its agent's report would write it."""
    await report(JobRepository(h.store), job_id, JobState.PENDING, h.clock.now(), reason="requeued by its cluster")


async def test_a_run_that_started_and_ended_after_the_last_save_is_counted_by_the_new_leader(
    make_harness: HarnessFactory,
) -> None:
    h = await make_harness({}, QUEUES)
    unsaved = await running_after_the_last_save(h)
    await h.tick(100)
    await h.tick()
    assert (await h.job(unsaved)).state is JobState.SUCCEEDED
    await assert_the_new_leader_counts_as_the_old(h, 200.0)  # 2 cpus for 100 s


async def test_a_run_that_started_after_the_last_save_and_went_back_to_the_queue_is_counted_by_the_new_leader(
    make_harness: HarnessFactory,
) -> None:
    """The job's record no longer shows that run: the new leader counts it from the store's history."""
    h = await make_harness({}, QUEUES)
    requeued = await running_after_the_last_save(h)
    h.clock.advance(60)
    await requeue(h, requeued)
    await h.service.sync()
    await assert_the_new_leader_counts_as_the_old(h, 120.0)  # 2 cpus for 60 s


async def saved_running(h: Harness) -> str:
    """A 2-cpu job that runs when the leader saves its accounting for the last time."""
    await h.join("c1", CPU4)
    job = await h.submit("t", cpu=2, runtime=1000)
    await h.tick()
    await h.tick()  # the job reports Running, and the leader's cycle saves its accounting with the run
    assert (await h.job(job)).state is JobState.RUNNING
    h.service.save_every = float("inf")  # what follows exists only in the old leader's memory
    return job


async def test_with_the_history_compacted_a_saved_run_that_went_back_to_the_queue_stops_at_its_requeue(
    make_harness: HarnessFactory,
) -> None:
    """The record shows no end; its history shows when the run let go of the cluster."""
    h = await make_harness({}, QUEUES)
    job = await saved_running(h)
    h.clock.advance(60)
    await requeue(h, job)
    await h.service.sync()
    h.clock.advance(40)  # the takeover comes later: the run must not be counted up to it
    await assert_the_new_leader_counts_as_the_old(h, 120.0, compacted=True)  # 2 cpus for 60 s


async def test_with_the_history_compacted_a_saved_run_whose_job_runs_again_is_counted_as_two_runs(
    make_harness: HarnessFactory,
) -> None:
    """Requeued and running again from another start: the saved run ends at the requeue, the gap is
    not counted, and the new run is counted from its start."""
    h = await make_harness({"cluster": {"lostAfter": "1h", "requeueAfter": "1h"}}, QUEUES)  # c1 sends no report
    job = await saved_running(h)
    h.clock.advance(60)
    await requeue(h, job)
    jobs = JobRepository(h.store)
    h.clock.advance(20)
    await dispatch(jobs, job, "c1", h.clock.now())
    h.clock.advance(10)
    await report(jobs, job, JobState.RUNNING, h.clock.now())
    await h.service.sync()
    h.clock.advance(30)
    # 2 cpus for 60 s, then 2 cpus from the new start for 30 s
    await assert_the_new_leader_counts_as_the_old(h, 180.0, running={job}, compacted=True)
