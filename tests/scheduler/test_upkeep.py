"""The leader keeps the store bounded: finished jobs leave after keepFinished, etcd's history is compacted."""

from __future__ import annotations

import pytest

from federation import keys
from federation.jobs import NotFound
from federation.models import JobState
from federation.store import CompactedError
from tests.scheduler.conftest import HarnessFactory
from tests.store.support import take

QUEUES = {"queues": [{"name": "a"}]}
CPU4 = [{"count": 1, "resources": {"cpu": 4}}]


async def test_finished_jobs_leave_the_store_once_past_their_retention(make_harness: HarnessFactory) -> None:
    h = await make_harness({"store": {"keepFinished": "1h", "compactEvery": "1d"}}, QUEUES)
    await h.join("c1", CPU4)
    early = await h.submit("t", cpu=1, runtime=100)
    await h.tick()
    await h.tick(100)  # early ends
    late = await h.submit("t", cpu=1, runtime=100)
    running = await h.submit("t", cpu=1, runtime=10_000)
    await h.tick(1800)
    await h.tick(100)  # late ends, half an hour after early
    assert {(await h.job(j)).state for j in (early, late)} == {JobState.SUCCEEDED}

    await h.tick(3600 - 1800)  # an hour and a bit after early ended; not an hour after late did
    with pytest.raises(NotFound):
        await h.job(early)
    assert await h.store.get(keys.job_index(JobState.SUCCEEDED.value, "a", early)) is None
    assert (await h.job(late)).state is JobState.SUCCEEDED
    assert await h.store.get(keys.job_index(JobState.SUCCEEDED.value, "a", late)) is not None
    assert (await h.job(running)).state is JobState.RUNNING

    await h.tick(1900)  # an hour and a bit after late ended
    with pytest.raises(NotFound):
        await h.job(late)
    assert (await h.job(running)).state is JobState.RUNNING


async def test_the_leader_compacts_etcd_history_one_period_back(make_harness: HarnessFactory) -> None:
    h = await make_harness({"store": {"compactEvery": "5m"}}, QUEUES)
    await h.join("c1", CPU4)
    before = await h.submit("t", cpu=1, runtime=1000)
    since = (await h.store.get(keys.job(before))).mod_revision  # type: ignore[union-attr]
    await h.tick()  # the first cycle notes the revision the next compaction goes back to
    await h.tick(299)
    assert [e.key for e in await take(h.store.watch(keys.JOBS, start_revision=since), 1)] == [keys.job(before)]
    await h.tick(1)
    with pytest.raises(CompactedError):
        await take(h.store.watch(keys.JOBS, start_revision=since), 1)
    await h.submit("t", cpu=1, runtime=1000)
    await h.tick()  # the scheduler's own watch, at the head, goes on
    assert len(await h.store.range(keys.index_prefix(JobState.RUNNING.value))) == 2
