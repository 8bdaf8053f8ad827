"""Dependencies in the scheduler service on real etcd: with ``jobs.killInvalidDepend: false`` a job whose
dependency failed stays Pending saying so (written once) and is never dispatched; a dependency on a job
the store no longer holds when the state is loaded is met (Slurm's rule for a purged job)."""

from __future__ import annotations

import pytest

from federation.jobs import expand
from federation.lifecycle import ON_CLUSTER
from federation.models import JobManifest, JobState
from federation.models.dependency import Wait
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

pytestmark = pytest.mark.etcd

CPU4 = [{"count": 1, "resources": {"cpu": 4}}]
QUEUES = {"queues": [{"name": "a"}]}
NEVER = "dependency never satisfied: afterok on job {}, and {} is Failed"


async def _dependant(h: Harness, *waits: Wait) -> str:
    manifest = JobManifest.model_validate(
        {"metadata": {"name": "after"}, "spec": {"queue": "a", "walltime": 50, "tasks": [{"runtime": 5}]}}
    )
    (record,) = expand(manifest, "x", h.clock.now())
    record.after = list(waits)
    await h.jobs.create([record])
    return record.id


async def test_kept_pending_saying_why_when_not_killed(make_harness: HarnessFactory) -> None:
    h = await make_harness({"jobs": {"killInvalidDepend": False}}, QUEUES)
    await h.join("east", CPU4)
    failing = await h.submit("x", runtime=100, walltime=10)  # killed at its walltime: Failed, not retried
    after = await _dependant(h, Wait(job=failing))
    await h.tick()
    assert (await h.job(after)).state is JobState.PENDING
    await h.tick(11)
    assert (await h.job(failing)).state is JobState.FAILED
    for _ in range(3):
        await h.tick(1)
    record = await h.job(after)
    assert (record.state, record.reason) == (JobState.PENDING, NEVER.format(failing, failing))
    assert [e.reason for e in record.events].count(record.reason) == 1  # written once, not every cycle
    assert h.service.state is not None and not h.service.state.considered(after)


async def test_cancelled_by_default_and_a_purged_dependency_is_met(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, QUEUES)
    await h.join("east", CPU4)
    failing = await h.submit("x", runtime=100, walltime=10)
    doomed = await _dependant(h, Wait(job=failing))
    purged = await _dependant(h, Wait(job="0000000000purged"))  # not in the store when the state loads
    await h.tick()
    assert (await h.job(purged)).state in ON_CLUSTER  # dispatched in the first cycle
    await h.tick(11)
    await h.tick(1)
    record = await h.job(doomed)
    assert (record.state, record.reason) == (JobState.CANCELLED, NEVER.format(failing, failing))
    assert record.start_time is None
