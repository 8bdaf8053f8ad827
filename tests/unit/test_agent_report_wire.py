"""The agent builds its report plain (issue 34: no pydantic model per report) and sends what the pydantic
``ClusterReport`` would: each plain twin has its model's fields in its model's order, and a real agent's
report, as ``to_wire`` writes it, validates as a ``ClusterReport`` whose JSON is the same bytes. So a new
agent and an old federation, or an old agent and a new one, still talk."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from pydantic import BaseModel

from federation.models import JobState
from federation.models.agent_report import (
    PlainClusterReport,
    PlainNodeReport,
    PlainRunningJob,
    PlainStatusUpdate,
    to_wire,
)
from federation.models.cluster import (
    Assignment,
    ClusterReport,
    NodeReport,
    ReportReply,
    RunningJob,
    StatusUpdate,
)
from federation.models.logs import LogChunk
from member_agent.agent import Agent
from member_agent.backends.base import NodeView
from member_agent.backends.simulated import EXIT_CODE, SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock
from tests.unit.records import job_record

TWINS: list[tuple[type, type[BaseModel]]] = [
    (PlainNodeReport, NodeReport),
    (PlainRunningJob, RunningJob),
    (PlainStatusUpdate, StatusUpdate),
    (PlainClusterReport, ClusterReport),
]


@pytest.mark.parametrize(("plain", "model"), TWINS, ids=[model.__name__ for _, model in TWINS])
def test_each_twin_has_its_models_fields_in_order(plain: type, model: type[BaseModel]) -> None:
    assert [f.name for f in fields(plain)] == list(model.model_fields)


def _same_bytes(report: PlainClusterReport) -> str:
    body = json.dumps(to_wire(report))
    validated = ClusterReport.model_validate_json(body)  # as the federation's API takes it in
    assert json.dumps(validated.model_dump(mode="json")) == body
    return body


def test_a_real_agents_report_is_a_cluster_reports_json() -> None:
    clock = ManualClock(100.0)
    nodes = [NodeView("n0", {"cpu": 4.0, "memory": 8.0}, labels={"zone": "a"}), NodeView("n1", {"cpu": 2.0})]
    backend = SimulatedBackend(nodes, clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    agent.reconcile()
    first = agent.build_report()  # not yet reconciled: it lists the runs it holds (none)
    assert first.known == []
    records = [job_record(job_id, [1.0, 1.0], JobState.DISPATCHED, "c", 1, walltime=50.0) for job_id in "ab"]
    records[1].spec.tasks[0].runtime = 10.0
    records[1].spec.tasks[0].env = {EXIT_CODE: "3"}
    agent.handle_reply(first, ReportReply(assignments=[Assignment.of(r) for r in records]))
    agent.schedule()
    clock.advance(20.0)
    agent.observe()
    report = agent.build_report()
    assert report.nodes and report.running and report.updates and report.honours
    assert {u.state for u in report.updates} >= {JobState.ADMITTED, JobState.RUNNING, JobState.FAILED}
    assert any(u.exit_code == 3 for u in report.updates)
    body = _same_bytes(report)
    print(f"a real agent's report: {len(body)} bytes, the same as ClusterReport's")


def test_every_field_set_is_the_same_bytes() -> None:
    update = PlainStatusUpdate(
        job_id="j", epoch=2, state=JobState.FAILED, time=5.5, exit_code=1, reason="r", log_tail="t", final=True
    )
    chunk = LogChunk(job_id="j", epoch=2, task="main-0", stream="stdout", first=3, lines=[(1.0, "x")], ended=True)
    report = PlainClusterReport(
        nodes=[PlainNodeReport(name="n+1", count=2, allocatable={"cpu": 2.0}, free={"cpu": 1.0}, unschedulable=True)],
        running=[PlainRunningJob(job_id="j", epoch=2, resources={"cpu": 1.0}, started_at=1.0, expected_end=9.0)],
        updates=[update],
        known=[("j", 2)],
        honours=["image"],
        logs=[chunk],
        unchanged_since=7,
        sent_at=12.5,
    )
    _same_bytes(report)
