"""A member agent ships its runs' output with its reports (here the simulated backend's synthetic lines,
1,000 on stdout and 3 on stderr over a 10 s run): the federation has the lines printed so far after
each report, all of them in order once the job ends, and a report never carries more than its limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from federation.models.agent_report import to_wire
from federation.models.cluster import ClusterReport, ReportReply
from federation.models.logs import MAX_CHUNKS_PER_REPORT, LogAck, LogLimits
from federation.store import MemoryStore
from member_agent.agent import Agent
from member_agent.backends.base import LogLines, NodeView
from member_agent.backends.simulated import SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from member_agent.log_shipper import LogShipper
from policies.clock import ManualClock
from tests.api.conftest import START, serving
from tests.api.support import Api, bearer, dispatch, job_spec, join

REPORT_LIMIT = 16 * 1024
MIB = 1024 * 1024


async def round_trip(api: Api, agent: Agent, credential: str) -> ReportReply:
    agent.observe()
    report = agent.build_report()
    assert sum(chunk.size() for chunk in report.logs) <= REPORT_LIMIT
    response = await api.http.post(
        f"/v1/clusters/{agent.cluster}/report", json=to_wire(report), headers=bearer(credential)
    )
    assert response.status_code == 200, response.text
    reply = ReportReply.model_validate(response.json())
    agent.handle_reply(report, reply)
    agent.schedule()
    return reply


async def lines(api: Api, job_id: str, **params: Any) -> list[str]:
    response = await api.http.get(f"/v1/jobs/{job_id}/logs", params=params, headers=api.auth("alice"))
    assert response.status_code == 200, response.text
    return [line["text"] for line in response.json()["lines"]]


async def test_the_simulated_backends_lines_reach_the_federation_as_they_are_printed(tmp_path: Path) -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    sections: dict[str, object] = {"logs": {"dir": str(tmp_path), "maxBytesPerReport": REPORT_LIMIT}}
    async with serving(store, clock, sections=sections) as api:
        credential = await join(api, "c1")
        env = {"FEDQ_SIM_STDOUT_LINES": "1000", "FEDQ_SIM_STDERR_LINES": "3"}
        task = {"name": "main", "replicas": 1, "resources": {"cpu": "1"}, "runtime": "10s", "env": env}
        response = await api.http.post("/v1/jobs", json=job_spec(tasks=[task]), headers=api.auth("alice"))
        job_id = response.json()["id"]
        await dispatch(api, job_id, "c1")
        backend = SimulatedBackend([NodeView("n1", {"cpu": 4.0})], clock)
        agent = Agent(None, "c1", backend, LocalScheduler(clock), clock)
        await round_trip(api, agent, credential)  # learns the limits, takes the job, launches it
        await round_trip(api, agent, credential)
        clock.advance(5.0)  # half way: lines 1-500 of stdout printed
        for _ in range(3):
            await round_trip(api, agent, credential)
        assert len(await lines(api, job_id, stream="stdout")) == 500
        clock.advance(6.0)
        for _ in range(5):
            await round_trip(api, agent, credential)
        stdout = [f"{job_id}/main-0 stdout line {k}/1000" for k in range(1, 1001)]
        stderr = [f"{job_id}/main-0 stderr line {k}/3" for k in (1, 2, 3)]
        assert await lines(api, job_id, stream="stdout") == stdout
        assert await lines(api, job_id, stream="stderr") == stderr
        everything = await api.http.get(f"/v1/jobs/{job_id}/logs", headers=api.auth("alice"))
        assert everything.json()["complete"] and len(everything.json()["lines"]) == 1003
        assert (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()["state"] == "Succeeded"
        assert agent.shipper.waiting() == 0
    await store.close()


def test_a_thousand_runs_ending_at_once_fit_reports_and_every_stream_is_closed_in_turn() -> None:
    """1,100 runs end between two reports: 2,200 streams to close, more than a report may carry
    (``MAX_CHUNKS_PER_REPORT``, 2,000). Each report carries at most that many and is one the model
    accepts (a list of all of them was refused, every time, so the agent was never heard again; issue
    33, point 7), and the streams left out go first in the next report."""
    shipper = LogShipper()
    shipper.limits = LogLimits(max_bytes_per_job=MIB, max_bytes_per_report=MIB)
    ends = [
        LogLines(f"j{i}", "main", 0, 1, stream, 0, ((1.0, "done"),) if stream == "stdout" else (), ended=True)
        for i in range(1100)
        for stream in ("stdout", "stderr")
    ]
    shipper.add(ends)
    closed: set[tuple[str, str]] = set()
    sizes = []
    for _ in range(2):
        chunks = shipper.chunks()
        sizes.append(len(chunks))
        report = ClusterReport(logs=chunks)  # what the agent's build_report makes: refused past the limit
        acks = [
            LogAck(job_id=c.job_id, epoch=c.epoch, task=c.task, stream=c.stream, next=c.first + len(c.lines), more=True)
            for c in report.logs
        ]
        shipper.acknowledge(acks, report.logs)
        closed |= {(c.job_id, c.stream) for c in report.logs if c.ended}
    print(f"chunks per report: {sizes}; streams closed {len(closed)} of {len(ends)}")
    assert sizes == [MAX_CHUNKS_PER_REPORT, len(ends) - MAX_CHUNKS_PER_REPORT]
    assert len(closed) == len(ends) and shipper.waiting() == 0 and not shipper.chunks()
