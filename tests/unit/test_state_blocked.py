"""Which queued jobs a cycle may consider (``FederationState.considered``): a held job, or one another
module blocks, stays out of the pending index (not dispatched, not counted as its queue's demand) and
comes back in its old place when nothing blocks it any more."""

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


def _federation(cpus: float = 1) -> FederationState:
    state = FederationState()
    state.set_queues(QueueTree(QueueTreeConfig.model_validate({"queues": [{"name": "q"}]})))
    state.set_cluster("c", {}, cordoned=False)
    node = NodeReport(name="n", allocatable={"cpu": cpus}, free={"cpu": cpus})
    state.set_report("c", NOW, ClusterReport(nodes=[node]))
    return state


def _job(job_id: str, submitted: float, priority: int = 0, held: bool = False) -> JobRecord:
    record = job_record(job_id, [1.0], JobState.PENDING)
    hold = {"held_by": "tenant/t", "held_at": NOW} if held else {}
    return record.model_copy(update={"submit_time": submitted, "priority": priority, **hold})


def test_a_held_job_is_passed_over_and_released_in_its_old_place() -> None:
    state = _federation()
    scheduler = GlobalScheduler(CONFIG, ManualClock(NOW))
    state.upsert_job(_job("first", 1.0), 1, b"")
    state.upsert_job(_job("second", 2.0), 2, b"")
    state.upsert_job(_job("first", 1.0, held=True), 3, b"")
    assert not state.considered("first")
    assert state.pending.queue_request("q") == {"cpu": 1.0}  # the held job is no demand
    assert scheduler.plan(state).dispatches == [("second", "c")]
    state.upsert_job(_job("first", 1.0), 4, b"")  # released before second was dispatched
    assert state.considered("first")
    assert scheduler.plan(state).dispatches == [("first", "c")]  # ahead of second again


def test_a_job_submitted_held_never_enters_the_pending_index() -> None:
    state = _federation()
    state.upsert_job(_job("held", 1.0, held=True), 1, b"")
    assert "held" not in state.pending
    assert GlobalScheduler(CONFIG, ManualClock(NOW)).plan(state).dispatches == []


def test_blocks_add_up_and_a_job_comes_back_only_when_none_is_left() -> None:
    state = _federation()
    state.upsert_job(_job("j", 1.0, held=True), 1, b"")
    state.block("j", "dependency")
    state.upsert_job(_job("j", 1.0), 2, b"")  # released, still waiting on its dependency
    assert "j" not in state.pending
    state.unblock("j", "dependency")
    assert "j" in state.pending


def test_a_priority_update_reorders_the_index_without_a_rescan() -> None:
    state = _federation()
    scheduler = GlobalScheduler(CONFIG, ManualClock(NOW))
    state.upsert_job(_job("old", 1.0), 1, b"")
    state.upsert_job(_job("new", 2.0), 2, b"")
    state.upsert_job(_job("new", 2.0, priority=10), 3, b"")
    assert scheduler.plan(state).dispatches == [("new", "c")]


def test_a_finished_job_forgets_its_blocks() -> None:
    state = _federation()
    state.upsert_job(_job("j", 1.0, held=True), 1, b"")
    state.upsert_job(job_record("j", [1.0], JobState.CANCELLED, end_time=NOW), 2, b"")
    assert state.blocked == {}


def test_a_finished_job_requeued_is_live_again_and_not_kept_for_removal() -> None:
    state = _federation()
    state.upsert_job(job_record("j", [1.0], JobState.FAILED, end_time=NOW), 1, b"")
    assert "j" in state.finished
    state.upsert_job(_job("j", 1.0), 2, b"")  # fedq requeue: Failed -> Pending
    assert "j" not in state.finished and "j" in state.pending
    assert state.finished_before(NOW + 10**6) == []  # the leader will not delete its record
