"""Times an agent reports are kept within what the federation has seen: never in the future (its clock
may run ahead, and the accountant's clock only moves forward, for every tenant), and no job ends before
it started."""

from __future__ import annotations

import pytest

from federation.models import JobRecord, JobState
from federation.models.cluster import ClusterReport, StatusUpdate
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

pytestmark = pytest.mark.etcd

CPU4 = [{"count": 1, "namePrefix": "n", "resources": {"cpu": 4}}]
DAY = 86_400.0


async def _dispatched(make_harness: HarnessFactory) -> tuple[Harness, JobRecord]:
    """A harness whose one job has just been dispatched to cluster c1."""
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    job_id = await h.submit("x", runtime=1000)
    await h.service.follow()
    assert await h.service.lead()
    await h.service.cycle()
    record = await h.job(job_id)
    assert record.state is JobState.DISPATCHED
    return h, record


async def test_a_future_start_or_end_is_taken_as_now_and_an_end_never_precedes_the_start(
    make_harness: HarnessFactory,
) -> None:
    h, record = await _dispatched(make_harness)
    job_id = record.id

    def update(state: JobState, at: float) -> ClusterReport:
        return ClusterReport(updates=[StatusUpdate(job_id=job_id, epoch=record.epoch, state=state, time=at)])

    h.clock.advance(10)
    now = h.clock.now()
    await h.clusters.report("c1", update(JobState.ADMITTED, now))
    await h.clusters.report("c1", update(JobState.RUNNING, now + DAY))
    assert (await h.job(job_id)).start_time == now

    h.clock.advance(5)
    await h.clusters.report("c1", update(JobState.SUCCEEDED, now - 100))
    ended = await h.job(job_id)
    assert (ended.state, ended.end_time) == (JobState.SUCCEEDED, now)


async def test_a_start_before_the_dispatch_is_taken_as_the_dispatch(make_harness: HarnessFactory) -> None:
    """An agent that sends no clock of its own (``sent_at``, from before it was sent) and runs a day
    behind: its start is taken no earlier than the run was dispatched, so no run is charged for time
    before it was sent (issue 33, point 5)."""
    h, record = await _dispatched(make_harness)
    sent = record.events[-1].time
    h.clock.advance(10)
    behind = h.clock.now() - DAY
    update = StatusUpdate(job_id=record.id, epoch=record.epoch, state=JobState.RUNNING, time=behind)
    await h.clusters.report("c1", ClusterReport(updates=[update]))
    assert (await h.job(record.id)).start_time == sent
