"""The agent's lease on its runs (HTCondor's job lease): unheard by the federation for its
``lostAfter``, it stops every run and launches nothing, so a requeue at ``requeueAfter`` never overlaps
a live run; heard again, it reports those runs stopped for their old epochs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from federation.client import FedqError
from federation.models import JobState
from federation.models.cluster import Assignment, ReportReply
from member_agent.agent import Agent, CredentialRejected
from member_agent.backends.base import NodeView, TaskPhase
from member_agent.backends.simulated import SimulatedBackend
from member_agent.credentials import Credential, load_credential, save_credential
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock
from tests.unit.records import job_record

LEASE = 15.0


def _agent() -> tuple[Agent, SimulatedBackend, ManualClock]:
    clock = ManualClock(0.0)
    backend = SimulatedBackend([NodeView("n0", {"cpu": 1.0})], clock)
    return Agent(None, "c", backend, LocalScheduler(clock), clock), backend, clock


def _round(agent: Agent, *assigned: str) -> None:
    """One answered report carrying ``assigned`` (one-cpu jobs of epoch 1), then the local cycle."""
    agent.observe()
    report = agent.build_report()
    records = [job_record(j, [1.0], JobState.DISPATCHED, "c", 1, walltime=600.0) for j in assigned]
    agent.handle_reply(report, ReportReply(assignments=[Assignment.of(r) for r in records], lease=LEASE))
    agent.schedule()


def test_an_unheard_agent_stops_its_runs_at_its_lease_and_reports_them_when_heard_again() -> None:
    agent, backend, clock = _agent()
    _round(agent, "a", "b")  # a runs on the only cpu; b waits
    assert [t.job_id for t in backend.tasks()] == ["a"]

    agent.build_report()  # sent at t=0 ... and never answered
    clock.advance(LEASE - 1)
    agent.keep_lease()
    assert not agent.fenced and backend.tasks()[0].phase is TaskPhase.RUNNING

    clock.advance(1)
    agent.keep_lease()
    assert agent.fenced
    agent.observe()
    assert backend.tasks() == []  # the run was stopped
    assert agent.schedule() is None  # and nothing new starts while fenced

    clock.advance(120)  # the federation requeued both meanwhile; then the agent is heard again
    report = agent.build_report()
    last = {u.job_id: u for u in report.updates}  # after the Admitted and Running the cut kept back
    assert {(j, u.epoch, u.state) for j, u in last.items()} == {("a", 1, JobState.PENDING), ("b", 1, JobState.PENDING)}
    assert all("fenced" in u.reason for u in last.values())
    refused = [{"job_id": j, "epoch": 1, "reason": "job is now epoch 2 on d"} for j in ("a", "b")]
    agent.handle_reply(report, ReportReply(refused=refused, lease=LEASE))
    assert not agent.fenced and agent.tracker.jobs == {}


def test_the_lease_runs_from_the_last_answered_report_and_needs_the_federation_to_name_it() -> None:
    agent, backend, clock = _agent()
    agent.handle_reply(agent.build_report(), ReportReply())  # a federation that names no lease
    clock.advance(10 * LEASE)
    agent.keep_lease()
    assert not agent.fenced

    _round(agent, "a")
    clock.advance(LEASE - 0.5)
    _round(agent)  # answered: renewed from this report's sending
    clock.advance(LEASE - 0.5)
    agent.keep_lease()
    assert not agent.fenced and [t.job_id for t in backend.tasks()] == ["a"]


def test_after_a_restart_the_lease_from_the_join_fences_the_runs_it_adopted(tmp_path: Path) -> None:
    clock = ManualClock(0.0)
    backend = SimulatedBackend([NodeView("n0", {"cpu": 1.0})], clock)
    before = Agent(None, "c", backend, LocalScheduler(clock), clock)
    _round(before, "a")  # a runs; then the agent restarts, and the federation stays out of reach
    path = tmp_path / "c.json"
    save_credential(path, Credential("https://fed", "c", "fedq_cluster_x", lease=LEASE))
    credential = load_credential(path)
    assert credential.lease == LEASE

    clock.advance(5)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock, lease=credential.lease)
    agent.reconcile()
    clock.advance(LEASE)
    agent.keep_lease()
    agent.observe()
    assert agent.fenced and backend.tasks() == []


class _Refusing:
    """A federation that no longer takes this cluster's credential."""

    def request(self, *_: object, **__: object) -> None:
        raise FedqError(401, "token expired: join again")


def test_an_agent_whose_credential_is_rejected_stops_its_runs_before_it_exits() -> None:
    agent, backend, clock = _agent()
    _round(agent, "a")
    agent.client = _Refusing()  # type: ignore[assignment]
    with pytest.raises(CredentialRejected):
        agent.run(threading.Event())
    agent.observe()
    assert agent.fenced and backend.tasks() == []
