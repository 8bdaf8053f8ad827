"""An update of a waiting job's priority reorders the production scheduler's line on its next cycle
(issue 23): the service follows the store's watch and re-keys the job in its pending index, no rescan."""

from __future__ import annotations

from federation.lifecycle import Update
from federation.models import JobState
from tests.scheduler.conftest import HarnessFactory

FLAT = {"queues": [{"name": "a", "tenants": []}]}
ONE_CPU = [{"count": 1, "namePrefix": "n", "resources": {"cpu": 1}}]


async def test_a_raised_priority_is_dispatched_first_on_the_next_cycle(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, FLAT)
    await h.join("c1", ONE_CPU)
    busy = await h.submit("t", name="busy", runtime=10)
    await h.tick()
    first = await h.submit("t", name="first", runtime=10)
    second = await h.submit("t", name="second", runtime=10)
    await h.tick(1)
    assert [(await h.job(j)).state for j in (busy, first, second)] == [
        JobState.RUNNING,
        JobState.RESERVED,  # the head of the line holds the cpu's next free moment
        JobState.PENDING,
    ]
    stored = await h.jobs.get(second)
    spec = stored.record.spec.model_copy(update={"priority": 5})
    await h.jobs.apply(stored, Update("tenant/t", spec), now=h.clock.now())
    await h.service.sync()
    state = h.service.state
    assert state is not None
    waiting = state.pending.get(second)
    assert waiting is not None and waiting.priority == 5  # re-keyed from the watch
    await h.tick(10)  # busy ends: the next cycle takes the raised job, though it was submitted later
    assert (await h.job(second)).state is JobState.RUNNING
    assert (await h.job(first)).state in (JobState.PENDING, JobState.RESERVED)
