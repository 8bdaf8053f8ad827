"""Every replica follows the store; a stand-by takes over from its warm state, without a reload."""

from __future__ import annotations

from federation.models import JobState
from federation.scheduler.service import SchedulerService
from tests.scheduler.conftest import HarnessFactory

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
