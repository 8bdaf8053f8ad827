"""``GET /v1/jobs`` pages through the job index from where the previous page stopped, on both stores.

Jobs of three tenants in three queues are moved into three states, so listings cross states and
queues; the etcd store reads in range pages of 100 (see ``tests/conftest.py``) and the API's own scan
limit is lowered where a test needs short pages.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from federation.cli import jobs as cli_jobs
from federation.jobs import JobRepository
from federation.models import JobState
from tests import jobflow
from tests.api.conftest import ApiFactory
from tests.api.support import Api, job_spec, populate


def in_key_order(jobs: dict[str, dict[str, Any]], **filters: str) -> list[str]:
    """The ids a listing with ``filters`` holds, in the index's key order ``<state>/<queue>/<id>``."""
    chosen = [job for job in jobs.values() if all(job[name] == value for name, value in filters.items())]
    return [job["id"] for job in sorted(chosen, key=lambda job: f"{job['state']}/{job['queue']}/{job['id']}")]


async def pages(api: Api, who: str, limit: int, **filters: str) -> list[list[dict[str, Any]]]:
    """Every page of a listing, following ``continue`` until it is null."""
    params: dict[str, Any] = {"limit": limit, **filters}
    found = []
    for _ in range(1000):
        response = await api.http.get("/v1/jobs", params=params, headers=api.auth(who))
        assert response.status_code == 200, response.text
        body = response.json()
        found.append(body["items"])
        if body["continue"] is None:
            return found
        params["continue"] = body["continue"]
    raise AssertionError("the listing never ended")


def ids(listed: list[list[dict[str, Any]]]) -> list[str]:
    return [item["id"] for page in listed for item in page]


async def first_continue(api: Api, who: str, **params: Any) -> str:
    response = await api.http.get("/v1/jobs", params={"limit": 2, **params}, headers=api.auth(who))
    token = response.json()["continue"]
    assert isinstance(token, str)
    return token


def forged(**cursor: Any) -> str:
    """A token in the API's own format, with what a client might put in it."""
    return base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode()


@pytest.mark.parametrize(
    "filters",
    [{}, {"state": "Pending"}, {"state": "Running", "queue": "scratch.default"}, {"queue": "scratch.default"}],
    ids=["all", "state", "state+queue", "queue"],
)
async def test_pages_list_every_job_once_in_key_order(api_on: ApiFactory, filters: dict[str, str]) -> None:
    async with api_on() as api:
        jobs = await populate(api)

        listed = await pages(api, "admin", 4, **filters)

    assert ids(listed) == in_key_order(jobs, **filters)
    assert all(len(page) == 4 for page in listed[:-1])
    assert all(item["state"] == jobs[item["id"]]["state"] for page in listed for item in page)


@pytest.mark.parametrize("who", ["admin", "alice"])
async def test_a_job_that_moves_back_in_key_order_while_a_page_is_read_is_listed_once(
    api_on: ApiFactory, who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page reads the index a state at a time, in key order (Admitted, Cancelled, Dispatched, ...). A job
    admitted just after the page began moves back in that order, from a range not read yet to one read
    already (or, for an admin's listing, to one the replica's counts said was empty): read each at the
    latest revision, the page missed it, and a listing of 60 jobs showed every job finished while one ran
    (tests/chaos/test_leader_kill_runs.py, once in CI). Read at one revision, the page lists it once, in
    the state it had when the page began."""
    async with api_on() as api:
        response = await api.http.post("/v1/jobs", json={"jobs": [job_spec()] * 3}, headers=api.auth("alice"))
        assert response.status_code == 201, response.text
        moving, *others = response.json()["ids"]
        repository = JobRepository(api.store)
        for job_id in (moving, others[0]):
            await jobflow.advance(repository, job_id, JobState.DISPATCHED, api.clock.now())
        admitted: list[str] = []

        async def admit() -> None:
            if not admitted:
                admitted.append(moving)
                await jobflow.report(repository, moving, JobState.ADMITTED, api.clock.now())

        counts, snapshot = api.app.state.fedq.counts.counts_at, api.store.snapshot

        async def counted(*args: Any) -> Any:  # the admin's listing: once the counts are taken
            found = await counts(*args)
            await admit()
            return found

        async def read(*args: Any, **kwargs: Any) -> Any:  # a tenant's listing: after its first read
            found = await snapshot(*args, **kwargs)
            await admit()
            return found

        monkeypatch.setattr(api.app.state.fedq.counts, "counts_at", counted)
        monkeypatch.setattr(api.store, "snapshot", read)
        response = await api.http.get("/v1/jobs", headers=api.auth(who))

        assert response.status_code == 200, response.text
        assert admitted == [moving], "the job was not moved while the page was read"
        listed = {item["id"]: item["state"] for item in response.json()["items"]}
        assert listed == {moving: "Dispatched", others[0]: "Dispatched", others[1]: "Pending"}
        assert (await repository.get(moving)).record.state is JobState.ADMITTED


@pytest.mark.parametrize("queue", [None, "scratch"], ids=["any-queue", "inner-queue"])
async def test_several_states_are_one_listing_paged_in_key_order(api_on: ApiFactory, queue: str | None) -> None:
    """``state=Pending&state=Succeeded``: what ``fedq jobs`` asks for its unfinished states in one listing
    (it made a request per state: six, with their TLS round trips, of its start-up)."""
    async with api_on() as api:
        jobs = await populate(api)
        params: dict[str, Any] = {"limit": 3, "state": ["Succeeded", "Pending"]}
        if queue is not None:
            params["queue"] = queue
        listed, paged = [], 0
        while params.get("continue", "") is not None:
            response = await api.http.get("/v1/jobs", params=params, headers=api.auth("admin"))
            assert response.status_code == 200, response.text
            listed += [item["id"] for item in response.json()["items"]]
            params["continue"], paged = response.json()["continue"], paged + 1
    under = [job for job in jobs.values() if queue is None or job["queue"].startswith(f"{queue}.")]
    wanted = {job["id"]: job for job in under if job["state"] in ("Pending", "Succeeded")}
    print(f"{len(listed)} jobs of two states in {paged} pages; {len(wanted)} expected")
    assert listed == in_key_order(wanted) and len(listed) > 3


async def test_a_bad_state_is_a_422_naming_it_and_a_watch_takes_one_state(api_on: ApiFactory) -> None:
    async with api_on() as api:
        bad = await api.http.get("/v1/jobs", params={"state": ["Pending", "Sleeping"]}, headers=api.auth("admin"))
        both = {"state": ["Pending", "Running"], "watch": "true"}
        watched = await api.http.get("/v1/jobs", params=both, headers=api.auth("admin"))
    print(bad.json(), watched.json())
    assert bad.status_code == 422 and bad.json()["fields"][0]["field"] == "query.state[1]", bad.text  # the second
    assert watched.status_code == 422 and watched.json()["fields"] == [
        {
            "field": "state",
            "message": "a watch follows one state or all: give state at most once, and filter its changes",
        }
    ]


async def test_the_tenant_filter_holds_on_every_page(api_on: ApiFactory) -> None:
    async with api_on() as api:
        jobs = await populate(api)

        own = await pages(api, "bob", 3)
        named = await pages(api, "admin", 3, tenant="carol", state="Pending")
        refused = await api.http.get("/v1/jobs", params={"tenant": "alice"}, headers=api.auth("bob"))

    assert ids(own) == in_key_order(jobs, tenant="bob")
    assert ids(named) == in_key_order(jobs, tenant="carol", state="Pending")
    assert refused.status_code == 403


@pytest.mark.parametrize(
    "token",
    [
        "not a token!",
        "bm90IGpzb24=",  # "not json"
        forged(after="view/", state=None, queue=None),  # a field missing
        forged(after=7, state=None, queue=None, tenant=None),
        forged(after="jobs/", state=None, queue=None, tenant=None),  # outside the index
        "é",
    ],
    ids=["not-base64", "not-json", "missing-field", "wrong-type", "outside-the-listing", "not-ascii"],
)
async def test_a_malformed_continue_is_a_400_naming_the_field(api_on: ApiFactory, token: str) -> None:
    async with api_on() as api:
        await populate(api)
        response = await api.http.get("/v1/jobs", params={"continue": token}, headers=api.auth("admin"))

    assert response.status_code == 400, response.text
    assert [field["field"] for field in response.json()["fields"]] == ["continue"]
    assert "continue" in response.json()["error"]


async def test_a_continue_token_works_only_with_the_filters_it_came_from(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await populate(api)
        pending = await first_continue(api, "admin", state="Pending")
        everyone = await first_continue(api, "admin")
        alices = await first_continue(api, "alice")

        same = await api.http.get(
            "/v1/jobs", params={"state": "Pending", "continue": pending}, headers=api.auth("admin")
        )
        misused = [
            await api.http.get("/v1/jobs", params={"state": "Running", "continue": pending}, headers=api.auth("admin")),
            await api.http.get("/v1/jobs", params={"continue": pending}, headers=api.auth("admin")),
            await api.http.get("/v1/jobs", params={"continue": everyone}, headers=api.auth("alice")),
            await api.http.get("/v1/jobs", params={"continue": alices}, headers=api.auth("bob")),
        ]

    assert same.status_code == 200
    for response in misused:
        assert response.status_code == 400, response.text
        assert response.json()["fields"][0]["field"] == "continue"
        assert "repeat that listing's filters" in response.json()["error"]


async def test_a_forged_position_still_lists_only_the_callers_jobs(api_on: ApiFactory) -> None:
    async with api_on() as api:
        jobs = await populate(api)
        token = forged(after="view/", state=None, queue=None, tenant="alice")
        response = await api.http.get("/v1/jobs", params={"continue": token}, headers=api.auth("alice"))

    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["items"]] == in_key_order(jobs, tenant="alice")


async def test_a_bounded_scan_gives_short_pages_that_still_reach_every_job(api_on: ApiFactory) -> None:
    async with api_on(listScanLimit=5) as api:
        jobs = await populate(api)

        alices = await pages(api, "alice", 10)
        everyone = await pages(api, "admin", 10)
        queue = await pages(api, "admin", 10, queue="research.nlp")

    assert ids(alices) == in_key_order(jobs, tenant="alice")
    # A tenant's pages read its own index: every key read is one of its jobs, so only the scan limit cuts them.
    assert all(len(page) == 5 for page in alices[:-1])
    assert ids(everyone) == in_key_order(jobs)
    assert all(len(page) == 5 for page in everyone[:-1])
    assert ids(queue) == in_key_order(jobs, queue="research.nlp")


async def test_a_request_without_limit_gets_the_configured_page_size(api_on: ApiFactory) -> None:
    async with api_on(pageSize=7) as api:
        jobs = await populate(api)
        response = await api.http.get("/v1/jobs", headers=api.auth("admin"))

    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["items"]] == in_key_order(jobs)[:7]
    assert response.json()["continue"] is not None


@contextmanager
def listing(items: list[dict[str, Any]]) -> Iterator[Any]:
    """A client whose pages held ``items`` in this order (what ``FedqClient.jobs`` yields)."""

    class Client:
        def jobs(self, **_: Any) -> Iterator[dict[str, Any]]:
            return iter(items)

    yield Client()


def test_fedq_jobs_shows_each_job_once_in_id_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = {"name": "j", "tenant": "alice", "queue": "q", "priority": 0, "submit_time": 0.0}
    read = [
        {**summary, "id": "b", "state": "Pending"},
        {**summary, "id": "c", "state": "Pending"},
        {**summary, "id": "a", "state": "Running"},
        {**summary, "id": "b", "state": "Running"},  # moved on while the pages were read
    ]
    monkeypatch.setattr(cli_jobs, "reader_from", lambda _: listing(read))

    args = argparse.Namespace(
        state=None,
        queue=None,
        tenant=None,
        output="json",
        now=0.0,
        watch=False,
        all=True,
        mine=False,
        sort="id",
        limit=None,
        expand=False,
        start=False,
    )
    assert cli_jobs.cmd_jobs(args) == 0

    shown = json.loads(capsys.readouterr().out)["items"]
    assert [(item["id"], item["state"]) for item in shown] == [("a", "Running"), ("b", "Running"), ("c", "Pending")]


async def test_a_resumed_page_reads_to_the_end_of_its_queue_before_the_rest(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """etcd counts every key from a read's start to its end (etcd-io/etcd#16510): a page that resumes
    inside a queue must not make its first read run to the end of the index."""
    jobs = await populate(api)
    token = await first_continue(api, "admin", limit=3)
    ends: list[str | None] = []
    real = api.store.snapshot

    async def spied(prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0) -> Any:
        ends.append(end)
        return await real(prefix, limit=limit, end=end, revision=revision)

    monkeypatch.setattr(api.store, "snapshot", spied)
    response = await api.http.get("/v1/jobs", params={"limit": 3, "continue": token}, headers=api.auth("admin"))

    resumed_after = jobs[in_key_order(jobs)[2]]
    assert response.status_code == 200
    assert ends[0] == f"view/{resumed_after['state']}/{resumed_after['queue']}0"
