"""Atomic, idempotent submits: a refused request leaves nothing behind however far it got, and a retry
with the same Idempotency-Key answers the first result and creates nothing new."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest

from federation import keys, submits
from federation.client import FedqClient
from federation.config import StoreUpkeepConfig
from federation.scheduler.state import FederationState
from federation.scheduler.upkeep import StoreUpkeep
from federation.store import Compare, MemoryStore, Op, StoreUnavailable, TxnResult
from federation.submits import STALE_AFTER
from policies.clock import ManualClock
from tests.api.conftest import START, ApiFactory, serving
from tests.api.support import Api, job_spec

OPEN = f"{keys.SUBMITS}open/"
BULK = {"jobs": [job_spec(f"j{n}") for n in range(80)]}  # more than one txn holds: staged, then published
LIMITS = {"maxJobsPerRequest": 100}


class FlakyStore(MemoryStore):
    """A memory store whose txns fail as unavailable by ``rules``, consumed in order: the first rule
    applies to the next txn that writes a key under its prefix, and fails it before applying, after
    applying (its answer lost), or lets it pass."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock)
        self.rules: list[tuple[str, str]] = []

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        when = None
        if self.rules and any(op.kind != "get" and op.key.startswith(self.rules[0][0]) for op in success):
            when = self.rules.pop(0)[1]
        if when == "before":
            raise StoreUnavailable("injected")
        result = await super().txn(compares, success, failure)
        if when == "after":
            raise StoreUnavailable("injected after applying")
        return result


@asynccontextmanager
async def flaky() -> AsyncIterator[tuple[FlakyStore, Api]]:
    clock = ManualClock(START)
    store = FlakyStore(clock)
    async with serving(store, clock, LIMITS) as api:
        yield store, api


def _key(name: str) -> dict[str, str]:
    return {"Idempotency-Key": name}


async def _left(api: Api) -> dict[str, int]:
    found = {prefix: len(await api.store.range(prefix)) for prefix in (keys.JOBS, keys.INDEX, keys.STAGED)}
    found["open"] = len(await api.store.range(f"{keys.SUBMITS}open/"))
    return found


async def test_a_retry_with_the_same_key_answers_the_first_result_and_writes_nothing(api_on: ApiFactory) -> None:
    async with api_on(**LIMITS) as api:
        headers = {**api.auth("alice"), **_key("k-1")}
        first = await api.http.post("/v1/jobs", json=BULK, headers=headers)
        assert first.status_code == 201, first.text
        revision = await api.store.revision()

        again = await api.http.post("/v1/jobs", json=BULK, headers=headers)

        assert again.status_code == 201 and again.json() == first.json()
        assert await api.store.revision() == revision
        assert (await _left(api))[keys.JOBS] == 80
        other = await api.http.post("/v1/jobs", json=BULK, headers={**api.auth("bob"), **_key("k-1")})
        assert other.status_code == 201 and other.json() != first.json()  # a key is the tenant's own


async def test_a_key_sent_with_another_body_or_malformed_is_422_naming_the_header(api_on: ApiFactory) -> None:
    async with api_on(**LIMITS) as api:
        headers = {**api.auth("alice"), **_key("k-2")}
        assert (await api.http.post("/v1/jobs", json=job_spec("a"), headers=headers)).status_code == 201
        revision = await api.store.revision()
        for body, header in ((job_spec("b"), headers), (job_spec("a"), {**api.auth("alice"), **_key(" " * 300)})):
            response = await api.http.post("/v1/jobs", json=body, headers=header)
            assert response.status_code == 422, response.text
            assert response.json()["fields"][0]["field"] == "Idempotency-Key"
        assert await api.store.revision() == revision


async def test_a_request_refused_while_staging_leaves_nothing_and_its_retry_lands_once() -> None:
    async with flaky() as (store, api):
        headers = {**api.auth("alice"), **_key("k-3")}
        store.rules = [(keys.STAGED, "after")]  # a staged chunk is written, its answer lost

        refused = await api.http.post("/v1/jobs", json=BULK, headers=headers)

        assert refused.status_code == 503, refused.text
        assert (await _left(api))[keys.JOBS] == 0
        assert (await api.http.get("/v1/jobs", headers=api.auth("alice"))).json()["items"] == []
        retried = await api.http.post("/v1/jobs", json=BULK, headers=headers)
        assert retried.status_code == 201, retried.text
        assert await _left(api) == {keys.JOBS: 80, keys.INDEX: 80, keys.STAGED: 0, "open": 0}


async def test_a_keyless_request_cut_short_before_its_commit_is_swept_once_stale() -> None:
    async with flaky() as (store, api):
        store.rules = [(keys.STAGED, "after"), (OPEN, "before")]  # staging fails, and so does its clean-up
        assert (await api.http.post("/v1/jobs", json=BULK, headers=api.auth("alice"))).status_code == 503
        assert (await _left(api))[keys.STAGED] == 1 and (await _left(api))[keys.JOBS] == 0
        api.clock.advance(STALE_AFTER + 1)

        assert (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).status_code == 201

        assert await _left(api) == {keys.JOBS: 1, keys.INDEX: 1, keys.STAGED: 0, "open": 0}


async def test_a_lost_start_is_503_and_the_retry_takes_over() -> None:
    async with flaky() as (store, api):
        headers = {**api.auth("alice"), **_key("k-4")}
        store.rules = [(OPEN, "after")]  # the journal is opened, its answer lost
        first = await api.http.post("/v1/jobs", json=BULK, headers=headers)
        assert first.status_code == 503 and (await _left(api))[keys.JOBS] == 0

        retried = await api.http.post("/v1/jobs", json=BULK, headers=headers)

        assert retried.status_code == 201, retried.text
        assert await _left(api) == {keys.JOBS: 80, keys.INDEX: 80, keys.STAGED: 0, "open": 0}


async def test_a_commit_whose_answer_was_lost_is_finished_by_the_retry() -> None:
    async with flaky() as (store, api):
        headers = {**api.auth("alice"), **_key("k-5")}
        store.rules = [(OPEN, "pass"), (OPEN, "after")]  # the commit lands, its answer is lost
        first = await api.http.post("/v1/jobs", json=BULK, headers=headers)
        assert first.status_code == 503 and "same Idempotency-Key" in first.json()["error"]
        assert (await _left(api))[keys.JOBS] == 0  # committed, not yet published

        retried = await api.http.post("/v1/jobs", json=BULK, headers=headers)

        assert retried.status_code == 201, retried.text
        assert await _left(api) == {keys.JOBS: 80, keys.INDEX: 80, keys.STAGED: 0, "open": 0}
        assert (await api.http.post("/v1/jobs", json=BULK, headers=headers)).json() == retried.json()


async def test_an_accepted_request_whose_publish_fails_is_published_before_its_201() -> None:
    async with flaky() as (store, api):
        store.rules = [(keys.JOBS, "before")]  # a publishing txn fails: the request is committed

        accepted = await api.http.post("/v1/jobs", json=BULK, headers=api.auth("alice"))

        assert accepted.status_code == 201, accepted.text
        stored = {kv.key.removeprefix(keys.JOBS) for kv in await api.store.range(keys.JOBS)}
        assert set(accepted.json()["ids"]) == stored
        assert await _left(api) == {keys.JOBS: 80, keys.INDEX: 80, keys.STAGED: 0, "open": 0}


async def test_a_request_whose_publish_keeps_failing_is_503_and_the_leader_publishes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(submits, "PUBLISH_WAIT", 0.5)
    async with flaky() as (store, api):
        store.rules = [(keys.JOBS, "before")] * 1000  # every publishing txn fails: the request is committed

        accepted = await api.http.post("/v1/jobs", json=BULK, headers={**api.auth("alice"), **_key("k-7")})

        assert accepted.status_code == 503 and "Do not submit it again" in accepted.json()["error"], accepted.text
        assert (await _left(api))[keys.JOBS] == 0 and (await _left(api))["open"] == 1
        store.rules = []  # the store is back; no request follows
        upkeep = StoreUpkeep(store, StoreUpkeepConfig(), api.clock)
        await upkeep.run(FederationState())
        assert (await _left(api))[keys.JOBS] == 0  # first seen: its own replica may be publishing it now
        api.clock.advance(submits.FINISH_EVERY)
        await upkeep.run(FederationState())
        assert await _left(api) == {keys.JOBS: 80, keys.INDEX: 80, keys.STAGED: 0, "open": 0}
        retried = await api.http.post("/v1/jobs", json=BULK, headers={**api.auth("alice"), **_key("k-7")})
        stored = {kv.key.removeprefix(keys.JOBS) for kv in await api.store.range(keys.JOBS)}
        assert retried.status_code == 201 and set(retried.json()["ids"]) == stored


async def test_a_request_that_fits_one_txn_is_that_txn_and_its_retry_answers_it() -> None:
    async with flaky() as (store, api):
        headers = {**api.auth("alice"), **_key("k-6")}
        store.rules = [(keys.JOBS, "after")]  # the one txn lands, its answer is lost
        first = await api.http.post("/v1/jobs", json=job_spec(), headers=headers)
        assert first.status_code == 503 and "same Idempotency-Key" in first.json()["error"]

        retried = await api.http.post("/v1/jobs", json=job_spec(), headers=headers)

        assert retried.status_code == 201, retried.text
        assert await _left(api) == {keys.JOBS: 1, keys.INDEX: 1, keys.STAGED: 0, "open": 0}


def test_fedq_client_sends_a_new_key_per_call_or_the_one_given() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["Idempotency-Key"])
        return httpx.Response(201, json={"id": "x", "ids": ["x"]})

    client = FedqClient("http://fedq")
    client._http = httpx.Client(base_url="http://fedq", transport=httpx.MockTransport(answer))
    client.submit(job_spec())
    client.submit_many([job_spec()])
    client.submit(job_spec(), idempotency_key="retry-me")
    client.close()

    assert len(set(sent[:2])) == 2 and sent[2] == "retry-me"
