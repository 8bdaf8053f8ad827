"""Job logs through the API: chunks come with a cluster's report, ``GET /v1/jobs/{id}/logs`` reads them
(filters, the cut, tenant isolation), and ``watch=true`` streams new lines until the job ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from federation.client import FedqClient
from federation.jobs import JobRepository
from federation.launcher import free_port
from federation.models import JobState
from federation.store import MemoryStore
from policies.clock import ManualClock
from tests import jobflow
from tests.api.conftest import START, serving
from tests.api.support import Api, dispatch, job_spec, join, report

GUARD = 10.0


def chunk(job_id: str, task: str, stream: str, first: int, texts: list[str], **extra: Any) -> dict[str, Any]:
    lines = [[START + first + i, text] for i, text in enumerate(texts)]
    return {"job_id": job_id, "epoch": 1, "task": task, "stream": stream, "first": first, "lines": lines, **extra}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    sections: dict[str, object] = {
        "logs": {"dir": str(tmp_path / "logs"), "maxBytesPerJob": 1000, "maxBytesPerReport": 600}
    }
    async with serving(store, clock, sections=sections) as served:
        yield served
    await store.close()


async def running_job(api: Api, tenant: str = "alice") -> tuple[str, str]:
    """A job of ``tenant`` dispatched to cluster c1 (epoch 1), and c1's credential."""
    credential = await join(api, "c1")
    response = await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth(tenant))
    job_id = str(response.json()["id"])
    assert await dispatch(api, job_id, "c1") == 1
    return job_id, credential


async def logs(api: Api, job_id: str, who: str = "alice", **params: Any) -> Any:
    response = await api.http.get(f"/v1/jobs/{job_id}/logs", params=params, headers=api.auth(who))
    assert response.status_code == 200, response.text
    return response.json()


async def test_lines_come_in_order_by_stream_and_task_and_a_resent_chunk_is_written_once(api: Api) -> None:
    job_id, credential = await running_job(api)
    out = chunk(job_id, "worker-0", "stdout", 0, ["a0", "a1", "a2"])
    err = chunk(job_id, "worker-0", "stderr", 0, ["oops"])
    other = chunk(job_id, "worker-1", "stdout", 0, ["b0"], ended=True)
    reply = await report(api, "c1", credential, logs=[out, err, other])
    assert reply["log_limits"] == {"max_bytes_per_job": 1000, "max_bytes_per_report": 600}
    assert [(a["task"], a["stream"], a["next"], a["more"]) for a in reply["log_acks"]] == [
        ("worker-0", "stdout", 3, True),
        ("worker-0", "stderr", 1, True),
        ("worker-1", "stdout", 1, True),
    ]
    again = chunk(job_id, "worker-0", "stdout", 1, ["a1", "a2", "a3"])  # a retried report overlaps
    assert (await report(api, "c1", credential, logs=[again]))["log_acks"][0]["next"] == 4

    everything = await logs(api, job_id)
    # by the time printed: a0 (t0), oops and b0 (t0, later streams keep their order), a1, a2, a3
    assert [line["text"] for line in everything["lines"]] == ["a0", "oops", "b0", "a1", "a2", "a3"]
    assert (everything["epoch"], everything["cut"], everything["complete"]) == (1, False, False)
    assert [line["text"] for line in (await logs(api, job_id, stream="stderr"))["lines"]] == ["oops"]
    assert [line["text"] for line in (await logs(api, job_id, task="1"))["lines"]] == ["b0"]
    assert [line["text"] for line in (await logs(api, job_id, task="worker", tail=2))["lines"]] == ["a2", "a3"]
    api.clock.advance(3.0)  # line n is printed at START + n: in the last 0.6 s only a3 (START + 3)
    assert [line["text"] for line in (await logs(api, job_id, since_seconds=0.6))["lines"]] == ["a3"]


async def test_output_past_the_job_limit_is_cut_with_a_marker_and_no_more_is_taken(api: Api) -> None:
    job_id, credential = await running_job(api)
    line = "x" * 99  # 100 bytes with its newline: 10 fit in maxBytesPerJob 1000
    acks = []
    for first in range(0, 30, 5):
        reply = await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", first, [line] * 5)])
        acks.append((reply["log_acks"][0]["next"], reply["log_acks"][0]["more"]))
    assert acks == [(5, True), (10, True), (10, False), (10, False), (10, False), (10, False)]
    shown = await logs(api, job_id)
    assert [entry["text"] for entry in shown["lines"][:10]] == [line] * 10
    assert len(shown["lines"]) == 11 and "output cut at 1000" in shown["lines"][10]["text"]
    assert shown["cut"] and shown["complete"]


async def test_a_report_takes_at_most_its_limit_and_the_rest_comes_with_the_next(api: Api) -> None:
    job_id, credential = await running_job(api)
    texts = [f"{i:09d}" for i in range(8)]  # 10 bytes each, two streams of 8: 160 bytes, limit 600
    big = ["y" * 99] * 8  # 800 bytes: only 6 lines fit one report of 600
    reply = await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, big)])
    assert reply["log_acks"][0]["next"] == 6 and reply["log_acks"][0]["more"]
    reply = await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stderr", 0, texts)])
    assert reply["log_acks"][0]["next"] == 8


async def test_the_end_of_a_job_of_a_thousand_tasks_is_taken_in_one_save_of_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job of 1,000 tasks ends: its 2,000 streams close in one report. The run's state (which lists
    every stream) is saved once, not after each chunk: 2,048 saves took 6.9 s here, past an agent's
    lease, and the agent fenced itself (issue 33, point 7); once, 0.35 s."""
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    sections: dict[str, object] = {"logs": {"dir": str(tmp_path / "logs")}, "api": {"maxBodyBytes": 1024 * 1024}}
    async with serving(store, clock, sections=sections) as api:
        await _closing_a_thousand_tasks(api, monkeypatch)
    await store.close()


async def _closing_a_thousand_tasks(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id, credential = await running_job(api)
    store = api.app.state.fedq.logs
    saves = 0
    real_save = store._save

    def counted(*args: Any) -> None:
        nonlocal saves
        saves += 1
        real_save(*args)

    monkeypatch.setattr(store, "_save", counted)
    ends = [chunk(job_id, f"worker-{i}", s, 0, [], ended=True) for i in range(1000) for s in ("stdout", "stderr")]
    reply = await report(api, "c1", credential, logs=ends)
    print(f"{len(ends)} chunks of one run: its state saved {saves} time(s)")
    assert saves == 1
    assert all(ack["more"] for ack in reply["log_acks"]) and len(reply["log_acks"]) == len(ends)
    assert (await logs(api, job_id))["complete"]


async def test_a_cluster_cannot_write_into_a_job_it_does_not_run(api: Api) -> None:
    job_id, _ = await running_job(api)
    other = await join(api, "c2")
    reply = await report(api, "c2", other, logs=[chunk(job_id, "worker-0", "stdout", 0, ["forged"])])
    assert reply["log_acks"][0]["more"] is False
    assert (await logs(api, job_id))["lines"] == []


@pytest.mark.parametrize(
    ("params", "status"), [({}, 404), ({"watch": "true"}, 404), ({"stream": "stderr", "tail": "5"}, 404)]
)
async def test_tenant_isolation_another_tenants_job_logs_are_out_of_reach(
    api: Api, params: dict[str, str], status: int
) -> None:
    job_id, credential = await running_job(api, "bob")
    await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, ["bob's secret"])])
    before = await api.store.revision()
    response = await api.http.get(f"/v1/jobs/{job_id}/logs", params=params, headers=api.auth("alice"))
    assert response.status_code == status, response.text
    assert "secret" not in response.text
    assert await api.store.revision() == before
    assert [line["text"] for line in (await logs(api, job_id, "admin"))["lines"]] == ["bob's secret"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"stream": "both"}, "stream"),
        ({"tail": "-1"}, "tail"),
        ({"since_seconds": "0"}, "since_seconds"),
        ({"epoch": "7"}, "epoch"),
        ({"watch": "true", "since": "3"}, "since"),  # not at a line's start
        ({"since": "0"}, "since"),  # resumes a stream only
    ],
)
async def test_bad_queries_are_422s_naming_the_field(api: Api, params: dict[str, str], field: str) -> None:
    job_id, credential = await running_job(api)
    await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, ["hello"])])
    before = await api.store.revision()
    response = await api.http.get(f"/v1/jobs/{job_id}/logs", params=params, headers=api.auth("alice"))
    assert response.status_code == 422, response.text
    assert field in str(response.json()["fields"])
    assert await api.store.revision() == before


async def test_following_shows_new_lines_and_resumes_after_a_cursor_then_ends_with_the_job(tmp_path: Path) -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    sections: dict[str, object] = {"logs": {"dir": str(tmp_path / "logs")}}
    async with serving(store, clock, sections=sections) as api:
        port = free_port()
        config = uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        serve = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(GUARD):
                while not server.started:
                    await asyncio.sleep(0.01)  # uvicorn offers no event for "listening"
            job_id, credential = await running_job(api)
            await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, ["one"])])
            with FedqClient(f"http://127.0.0.1:{port}", api.tokens["alice"]) as client:
                lines = client.logs(job_id, follow=True)
                assert (await asyncio.to_thread(next, lines))["text"] == "one"
                await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 1, ["two"])])
                async with asyncio.timeout(GUARD):
                    assert (await asyncio.to_thread(next, lines))["text"] == "two"
                last = chunk(job_id, "worker-0", "stdout", 2, ["three"], ended=True)
                await report(api, "c1", credential, logs=[last])
                await jobflow.report(JobRepository(store), job_id, JobState.SUCCEEDED, START + 5)
                async with asyncio.timeout(GUARD):
                    rest = await asyncio.to_thread(list, lines)  # ends: the job ended, its output complete
                assert [line["text"] for line in rest] == ["three"]
                cursor = (await logs(api, job_id))["cursor"]
                response = await api.http.get(
                    f"/v1/jobs/{job_id}/logs", params={"watch": "true", "since": str(cursor)}, headers=api.auth("alice")
                )
                assert response.status_code == 200 and "three" not in response.text and "event: end" in response.text
        finally:
            server.should_exit = True
            await serve
    await store.close()


async def test_a_replica_serves_the_logs_an_agent_reported_to_another_through_the_shared_dir(
    api: Api, tmp_path: Path
) -> None:
    job_id, credential = await running_job(api)
    await report(api, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, ["from replica one"])])
    sections: dict[str, object] = {"logs": {"dir": str(tmp_path / "logs")}}  # the same dir as ``api``'s
    async with serving(api.store, api.clock, sections=sections) as other:
        response = await other.http.get(f"/v1/jobs/{job_id}/logs", headers=api.auth("admin"))
        assert [line["text"] for line in response.json()["lines"]] == ["from replica one"]
        await report(
            other, "c1", credential, logs=[chunk(job_id, "worker-0", "stdout", 0, ["from replica one", "two"])]
        )
    assert [line["text"] for line in (await logs(api, job_id))["lines"]] == ["from replica one", "two"]
