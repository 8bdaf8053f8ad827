"""A job back in the queue after a failed run is not dispatched before its retry time: the scheduler's
state holds it out of the pending jobs until the injected clock reaches that time."""

from __future__ import annotations

from federation.config import FederationConfig
from federation.models import JobRecord, JobState, QueueTree
from federation.models.cluster import ClusterReport, NodeReport
from federation.models.queue import QueueTreeConfig
from federation.scheduler.cycle import GlobalScheduler
from federation.scheduler.state import FederationState
from policies.clock import ManualClock
from tests.unit.records import job_record

NOW = 1000.0
CONFIG = FederationConfig.model_validate({"cluster": {"lostAfter": "1h", "requeueAfter": "1h"}})


def _federation() -> FederationState:
    state = FederationState()
    state.set_queues(QueueTree(QueueTreeConfig.model_validate({"queues": [{"name": "q"}]})))
    state.set_cluster("c", {}, cordoned=False)
    node = NodeReport(name="n", allocatable={"cpu": 4}, free={"cpu": 4})
    state.set_report("c", NOW, ClusterReport(nodes=[node]))
    return state


def _retried(job_id: str, retry_at: float) -> JobRecord:
    return job_record(job_id, [1.0], JobState.PENDING).model_copy(
        update={"attempt": 1, "retries": 1, "retry_at": retry_at}
    )


def test_a_retried_job_is_dispatched_only_once_its_backoff_has_passed() -> None:
    clock = ManualClock(NOW)
    state = _federation()
    state.upsert_job(job_record("fresh", [1.0], JobState.PENDING), 1, b"")
    state.upsert_job(_retried("retried", NOW + 30), 2, b"")
    scheduler = GlobalScheduler(CONFIG, clock)
    assert scheduler.plan(state).dispatches == [("fresh", "c")]
    state.remove_job("fresh")
    clock.set(NOW + 29.9)
    assert not state.may_act(clock.now(), CONFIG.cluster.lost_after)
    assert scheduler.plan(state).dispatches == []
    clock.set(NOW + 30)
    assert state.may_act(clock.now(), CONFIG.cluster.lost_after)
    assert scheduler.plan(state).dispatches == [("retried", "c")]


def test_a_job_that_leaves_the_queue_during_its_backoff_is_forgotten() -> None:
    clock = ManualClock(NOW)
    state = _federation()
    state.upsert_job(_retried("cancelled", NOW + 30), 1, b"")
    state.upsert_job(job_record("cancelled", [1.0], JobState.CANCELLED, end_time=NOW + 1), 2, b"")
    clock.set(NOW + 30)
    assert GlobalScheduler(CONFIG, clock).plan(state).dispatches == []
    assert len(state.pending) == 0
