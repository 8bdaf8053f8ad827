"""Job event streams over a real socket (httpx's ASGI transport buffers whole answers, so a stream would
never return): a job's history then its transitions as they happen, a filtered listing's changes, resuming
after a revision with nothing repeated or missed, 410 for a compacted revision, 429 past the per-tenant
limit, and every refusal a 4xx that writes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from federation import keys, sse
from federation.client import FedqClient
from federation.jobs import JobRepository
from federation.launcher import free_port
from federation.models import JobState
from federation.store import MemoryStore, Op
from policies.clock import ManualClock
from tests import jobflow
from tests.api.conftest import START, serving
from tests.api.support import Api, job_spec

GUARD = 10.0  # seconds before a message that never comes fails the test


@pytest.fixture
async def live() -> AsyncIterator[tuple[Api, str]]:
    """The API (two streams per tenant at most) served by uvicorn on a loopback port, and its URL."""
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    async with serving(store, clock, {"maxWatchesPerTenant": 2}) as api:
        port = free_port()
        config = uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        config.timeout_graceful_shutdown = 1
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        async with asyncio.timeout(GUARD):
            while not server.started:
                await asyncio.sleep(0.01)  # uvicorn offers no event for "listening"
        yield api, f"http://127.0.0.1:{port}"
        server.should_exit = True
        await task
    await store.close()


class Stream:
    """An open stream's messages, read one at a time within ``GUARD``."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self._reader = sse.Reader()

    async def next(self) -> sse.Message:
        async with asyncio.timeout(GUARD):
            async for line in self._lines:
                message = self._reader.feed(line)
                if message is not None:
                    return message
        raise AssertionError("the stream ended")


@asynccontextmanager
async def stream(url: str, token: str, path: str, **params: Any) -> AsyncIterator[Stream]:
    headers = {"Authorization": f"Bearer {token}", **params.pop("headers", {})}
    async with httpx.AsyncClient(base_url=url, timeout=GUARD) as http:
        async with http.stream("GET", path, params={"watch": "true", **params}, headers=headers) as response:
            assert response.status_code == 200, (await response.aread()).decode()
            assert response.headers["content-type"].startswith(sse.MEDIA_TYPE)
            yield Stream(response)


async def submitted(api: Api, who: str = "alice") -> str:
    response = await api.http.post(
        "/v1/jobs", json=job_spec(), params={"allowUnschedulable": "true"}, headers=api.auth(who)
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def moves(message: sse.Message) -> list[tuple[str | None, str]]:
    return [(event["from"], event["to"]) for event in message.data["events"]]


async def test_history_then_each_transition_once_and_a_resume_repeats_nothing(live: tuple[Api, str]) -> None:
    api, url = live
    jobs = JobRepository(api.store)
    job_id = await submitted(api)
    history = (await api.http.get(f"/v1/jobs/{job_id}/events", headers=api.auth("alice"))).json()
    assert (history["state"], [e["to"] for e in history["events"]]) == ("Pending", ["Pending"])

    token = api.tokens["alice"]
    async with stream(url, token, f"/v1/jobs/{job_id}/events") as first:
        opening = await first.next()
        assert (opening.event, opening.id, moves(opening)) == ("job", history["revision"], [(None, "Pending")])
        await jobflow.dispatch(jobs, job_id, "c1", START)
        dispatched = await first.next()
        running_at = (await jobflow.report(jobs, job_id, JobState.RUNNING, START + 1)).revision
        running = await first.next()
    assert moves(dispatched) == [("Pending", "Dispatched")]
    assert (moves(running), running.id, running.data["job"]["state"]) == (
        [("Dispatched", "Running")],
        running_at,
        "Running",
    )

    # While nobody listens the job ends; a resume after the Dispatched message gets Running and the end, once each.
    await jobflow.report(jobs, job_id, JobState.SUCCEEDED, START + 2, exit_code=0)
    async with stream(url, token, f"/v1/jobs/{job_id}/events", since=dispatched.id) as resumed:
        again = [await resumed.next(), await resumed.next()]
    assert [moves(message) for message in again] == [[("Dispatched", "Running")], [("Running", "Succeeded")]]
    headers = {"Last-Event-ID": str(running.id)}
    async with stream(url, token, f"/v1/jobs/{job_id}/events", headers=headers) as by_header:
        assert moves(await by_header.next()) == [("Running", "Succeeded")]


async def test_a_listing_stream_shows_jobs_entering_and_leaving_its_state_and_only_the_tenants_own(
    live: tuple[Api, str],
) -> None:
    api, url = live
    jobs = JobRepository(api.store)
    mine, theirs = await submitted(api, "alice"), await submitted(api, "bob")
    async with stream(url, api.tokens["alice"], "/v1/jobs", state="Running") as running:
        start = await running.next()
        assert (start.event, start.id) == ("start", await api.store.revision())
        await jobflow.advance(jobs, theirs, JobState.RUNNING, START)  # bob's: alice hears nothing of it
        await jobflow.advance(jobs, mine, JobState.RUNNING, START)
        entered = await running.next()
        await jobflow.report(jobs, mine, JobState.FAILED, START + 1, exit_code=3)
        left = await running.next()
    assert [(c["type"], c["job"]["id"], c["job"]["state"]) for c in entered.data["changes"]] == [
        ("put", mine, "Running")
    ]
    assert [(c["type"], c["job"]["id"]) for c in left.data["changes"]] == [("delete", mine)]
    assert start.id is not None and entered.id is not None and left.id is not None
    assert start.id < entered.id < left.id


async def test_a_listing_stream_carries_why_each_put_job_waits_as_the_listing_does(live: tuple[Api, str]) -> None:
    """Issue 36: ``fedq jobs --watch`` and the dashboard's live Jobs view show a waiting job's reason code
    as a listed one does; the stream's puts carried no ``wait``, so a live REASON went blank."""
    api, url = live
    job_id = await submitted(api)
    async with stream(url, api.tokens["alice"], "/v1/jobs", state="Pending") as pending:
        await pending.next()  # the start
        held = await api.http.post(f"/v1/jobs/{job_id}/hold", headers=api.auth("alice"))
        assert held.status_code == 200, held.text
        on_hold = await pending.next()
        listed = (await api.http.get("/v1/jobs", params={"state": "Pending"}, headers=api.auth("alice"))).json()
        released = await api.http.post(f"/v1/jobs/{job_id}/release", headers=api.auth("alice"))
        assert released.status_code == 200, released.text
        let_go = await pending.next()
    waits = [[(c["type"], c["job"].get("wait")) for c in m.data["changes"]] for m in (on_hold, let_go)]
    print(f"the stream's puts: held {waits[0]}, released {waits[1]}")
    assert waits[0] == [("put", listed["items"][0]["wait"])] and waits[0][0][1]["code"] == "JobHeldUser", waits
    assert waits[1] == [("put", {"code": "None", "text": "no scheduling cycle has considered it yet", "start": None})]


async def test_a_removed_record_ends_its_stream(live: tuple[Api, str]) -> None:
    api, url = live
    job_id = await submitted(api)
    async with stream(url, api.tokens["alice"], f"/v1/jobs/{job_id}/events") as events:
        await events.next()
        record = (await JobRepository(api.store).get(job_id)).record
        index = keys.job_index(record.state.value, record.queue, job_id)
        await api.store.txn([], [Op.delete(keys.job(job_id)), Op.delete(index)])  # as upkeep removes it
        gone = await events.next()
    assert (gone.event, gone.data["id"]) == ("removed", job_id)


async def test_streams_past_the_tenants_limit_are_a_429_and_a_closed_one_frees_its_slot(live: tuple[Api, str]) -> None:
    api, url = live
    job_id = await submitted(api)
    token = api.tokens["alice"]
    path = f"/v1/jobs/{job_id}/events"
    async with stream(url, token, path) as one, stream(url, token, "/v1/jobs") as two:
        await one.next(), await two.next()
        async with httpx.AsyncClient(base_url=url, timeout=GUARD) as http:
            refused = await http.get(path, params={"watch": "true"}, headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 429
            assert "api.maxWatchesPerTenant" in refused.json()["error"]
        async with stream(url, api.tokens["bob"], "/v1/jobs") as bobs:  # another tenant's slots are its own
            assert (await bobs.next()).event == "start"

    async def reopened() -> None:
        while True:  # the server frees a slot when it notices the client went: no event tells the test when
            async with httpx.AsyncClient(base_url=url, timeout=GUARD) as http:
                async with http.stream(
                    "GET", path, params={"watch": "true"}, headers={"Authorization": f"Bearer {token}"}
                ) as response:
                    if response.status_code == 200:
                        return
            await asyncio.sleep(0.05)

    await asyncio.wait_for(reopened(), GUARD)


@pytest.mark.parametrize(
    ("params", "headers", "status", "field"),
    [
        ({"since": "1"}, {}, 422, "since"),  # since without watch
        ({"watch": "true", "since": "999999"}, {}, 422, "since"),  # ahead of the store
        ({"watch": "true"}, {"Last-Event-ID": "yesterday"}, 422, "Last-Event-ID"),
        ({"watch": "true", "since": "-1"}, {}, 422, "since"),
    ],
)
async def test_bad_resume_points_are_refused_naming_the_field_and_nothing_is_written(
    api: Api, params: dict[str, str], headers: dict[str, str], status: int, field: str
) -> None:
    job_id = await submitted(api)
    before = await api.store.revision()
    for path in (f"/v1/jobs/{job_id}/events", "/v1/jobs"):
        response = await api.http.get(path, params=params, headers={**api.auth("alice"), **headers})
        assert response.status_code == status, response.text
        assert field in response.json()["fields"][0]["field"]
    assert await api.store.revision() == before


async def test_a_compacted_revision_is_a_410_saying_to_re_list(api: Api) -> None:
    job_id = await submitted(api)
    old = await api.store.revision()
    await jobflow.dispatch(JobRepository(api.store), job_id, "c1", START)
    await api.store.compact(await api.store.revision())
    for path in (f"/v1/jobs/{job_id}/events", "/v1/jobs"):
        response = await api.http.get(path, params={"watch": "true", "since": str(old - 1)}, headers=api.auth("alice"))
        assert response.status_code == 410, response.text
        assert "re-read" in response.json()["error"]


async def test_paging_a_watch_is_refused(api: Api) -> None:
    response = await api.http.get("/v1/jobs", params={"watch": "true", "limit": "5"}, headers=api.auth("alice"))
    assert response.status_code == 422
    assert response.json()["fields"][0]["field"] == "limit"


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/v1/jobs/{theirs}/events", {}, 404),
        ("/v1/jobs/{theirs}/events", {"watch": "true"}, 404),
        ("/v1/jobs/{theirs}/events", {"watch": "true", "since": "1"}, 404),
        ("/v1/jobs", {"watch": "true", "tenant": "bob"}, 403),
    ],
)
async def test_tenant_isolation_another_tenants_job_events_are_out_of_reach(
    api: Api, path: str, params: dict[str, str], status: int
) -> None:
    theirs = await submitted(api, "bob")
    before = await api.store.revision()
    response = await api.http.get(path.format(theirs=theirs), params=params, headers=api.auth("alice"))
    assert response.status_code == status, response.text
    assert theirs not in response.text or "not found" in response.json()["error"]
    assert await api.store.revision() == before


async def test_the_client_waits_for_the_end_or_its_timeout_and_iterates_events_async(live: tuple[Api, str]) -> None:
    api, url = live
    jobs = JobRepository(api.store)
    job_id = await submitted(api)
    with FedqClient(url, api.tokens["alice"]) as client:
        with pytest.raises(TimeoutError):
            await asyncio.to_thread(client.wait, [job_id], 0.3)
        waiting = asyncio.create_task(asyncio.to_thread(client.wait, [job_id], GUARD))
        await jobflow.advance(jobs, job_id, JobState.RUNNING, START)
        assert not waiting.done()
        await jobflow.report(jobs, job_id, JobState.FAILED, START + 1, exit_code=2)
        assert await waiting == {job_id: "Failed"}
    with FedqClient(url, api.tokens["alice"]) as client:
        seen = []
        async with asyncio.timeout(GUARD):
            async for event in client.aevents(job_id):
                seen.append((event["from"], event["to"]))
                if event["to"] == "Failed":
                    break
    assert seen == [(None, "Pending"), ("Pending", "Dispatched"), ("Dispatched", "Running"), ("Running", "Failed")]
