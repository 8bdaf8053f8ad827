"""A member agent's local cycle says what it did: how many jobs it launched, or None when no session ran
(the simulator counts local cycles and decides whether a round moved anything by it)."""

from __future__ import annotations

from federation.models import JobState
from federation.models.cluster import Assignment, ClusterReport, ReportReply
from member_agent.agent import Agent
from member_agent.backends.base import NodeView
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
