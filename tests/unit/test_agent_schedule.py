"""A member agent's local cycle says what it did: how many jobs it launched, or None when no session ran
(the simulator counts local cycles and decides whether a round moved anything by it)."""

from __future__ import annotations

from collections.abc import Sequence

from federation.models import JobState
from federation.models.cluster import Assignment, ClusterReport, ReportReply
from member_agent.agent import Agent
from member_agent.backends.base import JobRejected, LaunchError, NodeView, TaskLaunch
from member_agent.backends.simulated import SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock
from tests.unit.records import job_record


def _assign(agent: Agent, *jobs: tuple[str, float]) -> None:
    """The federation's reply to an empty report: these (job, cpu) assignments."""
    assignments = [
        Assignment.of(job_record(job_id, [cpu], JobState.DISPATCHED, "c", 1, walltime=60.0)) for job_id, cpu in jobs
    ]
    agent.handle_reply(ClusterReport(nodes=[]), ReportReply(assignments=assignments))


def test_schedule_returns_the_jobs_it_launched_and_none_without_a_session() -> None:
    clock = ManualClock(0.0)
    backend = SimulatedBackend([NodeView("n0", {"cpu": 2.0})], clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    assert agent.schedule() is None  # not reconciled with the federation yet

    _assign(agent)
    assert agent.schedule() is None  # nothing waits

    _assign(agent, ("a", 1.0), ("b", 1.0))
    assert agent.schedule() == 2
    assert {t.job_id for t in backend.tasks()} == {"a", "b"}

    _assign(agent, ("c", 1.0))
    assert agent.schedule() == 0  # a session ran, the node is full
    assert agent.schedule() == 0  # still waiting

    clock.advance(60.0)
    agent.observe()
    assert agent.schedule() == 1  # a and b ended: c starts


class _Refusing(SimulatedBackend):
    """Refuses every launch with ``error``."""

    def __init__(self, error: LaunchError, clock: ManualClock) -> None:
        super().__init__([NodeView("n0", {"cpu": 2.0})], clock)
        self.error = error
        self.launches = 0

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        self.launches += 1
        raise self.error


def _sent(agent: Agent) -> list[tuple[JobState, str]]:
    return [(u.state, u.reason) for u in agent.tracker.outbox() if u.state is not JobState.ADMITTED]


def test_a_launch_refused_for_the_jobs_own_reasons_fails_it_at_once() -> None:
    clock = ManualClock(0.0)
    backend = _Refusing(JobRejected("task main has no command"), clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    _assign(agent, ("a", 1.0))
    assert agent.schedule() == 0
    assert _sent(agent) == [(JobState.FAILED, "task main has no command")]
    assert agent.schedule() is None and backend.launches == 1  # not tried again here


def test_a_launch_that_fails_for_the_clusters_reasons_is_tried_again_then_handed_back() -> None:
    clock = ManualClock(0.0)
    backend = _Refusing(LaunchError("resources not free within 30s"), clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    _assign(agent, ("a", 1.0))
    for _ in range(3):
        assert agent.schedule() == 0
    assert _sent(agent) == [(JobState.PENDING, "launch failed 3 times: resources not free within 30s")]
    assert backend.launches == 3
