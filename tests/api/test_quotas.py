"""Limits that protect the shared store at submit: a record's size, a tenant's quota, the store's budget.
Each refusal says the limit and writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from federation import keys
from federation.jobs import JobRepository
from federation.models import JobState, QueueTree, QueueTreeConfig
from federation.quotas import SUM_SHARE, USAGE_FRESH_FOR, QuotaLedger, Usage, tenant_usage
from federation.store import KeyValue, MemoryStore, StoreSnapshot
from policies.clock import ManualClock
from tests import jobflow
from tests.api.conftest import QUEUES as QUEUE_TREE
from tests.api.conftest import START, ApiFactory
from tests.api.support import Api, job_spec

QUOTAS = {"quotas": {"default": {"jobs": 4, "tasks": 10}, "tenants": {"bob": {"jobs": 6}}}}


async def _stored(api: Api) -> int:
    return len(await api.store.range(keys.JOBS))


async def test_a_record_over_the_byte_limit_is_413_naming_the_limit_and_its_size(api_on: ApiFactory) -> None:
    async with api_on(maxRecordBytes=4096) as api:
        big = job_spec("big", tasks=[{"name": "w", "command": ["echo", "x" * 5000], "resources": {"cpu": 1}}])
        body = {"jobs": [job_spec("small"), big]}
        revision = await api.store.revision()

        response = await api.http.post("/v1/jobs", json=body, headers=api.auth("alice"))

        assert response.status_code == 413, response.text
        error = response.json()
        assert "4096" in error["error"] and "api.maxRecordBytes" in error["error"]
        assert error["fields"][0]["field"] == "jobs[1].spec"
        assert await api.store.revision() == revision


async def test_a_tenant_over_its_quota_is_429_and_others_still_submit(api_on: ApiFactory) -> None:
    async with api_on(sections=QUOTAS) as api:
        first = await api.http.post(
            "/v1/jobs", json={"jobs": [job_spec(f"a{n}") for n in range(3)]}, headers=api.auth("alice")
        )
        assert first.status_code == 201, first.text
        revision = await api.store.revision()

        over = await api.http.post(
            "/v1/jobs", json={"jobs": [job_spec("a3"), job_spec("a4")]}, headers=api.auth("alice")
        )

        assert over.status_code == 429, over.text
        message = over.json()["error"]
        assert "quota of 4 unfinished jobs" in message and "it has 3" in message and "adds 2" in message
        assert await api.store.revision() == revision
        other = await api.http.post("/v1/jobs", json=job_spec("c0", queue="research.nlp"), headers=api.auth("carol"))
        assert other.status_code == 201, other.text


async def test_tasks_count_replicas_and_array_elements(api_on: ApiFactory) -> None:
    async with api_on(sections=QUOTAS) as api:  # each job_spec has 2 replicas; 10 tasks at most
        array = job_spec("arr", array={"count": 6})
        response = await api.http.post("/v1/jobs", json=array, headers=api.auth("bob"))
        assert response.status_code == 429, response.text
        assert "quota of 10 unfinished tasks" in response.json()["error"]


async def test_a_tenants_override_replaces_the_default_field_by_field(api_on: ApiFactory) -> None:
    async with api_on(sections=QUOTAS) as api:
        five = {"jobs": [job_spec(f"b{n}", tasks=[{"name": "w", "resources": {"cpu": 1}}]) for n in range(5)]}
        response = await api.http.post("/v1/jobs", json=five, headers=api.auth("bob"))
        assert response.status_code == 201, response.text  # bob's jobs quota is 6; tasks stay 10
        assert (await api.http.post("/v1/jobs", json=five, headers=api.auth("bob"))).status_code == 429


async def test_ended_jobs_no_longer_count(api_on: ApiFactory) -> None:
    async with api_on(sections=QUOTAS) as api:
        body = {"jobs": [job_spec(f"a{n}") for n in range(4)]}
        ids = (await api.http.post("/v1/jobs", json=body, headers=api.auth("alice"))).json()["ids"]
        assert (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).status_code == 429
        assert (await api.http.delete(f"/v1/jobs/{ids[0]}", headers=api.auth("alice"))).status_code == 200
        assert (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).status_code == 201


async def test_requeueing_finished_jobs_counts_against_the_quota_as_submitting_them_would(api_on: ApiFactory) -> None:
    """alice's quota is 4 unfinished jobs: with 3 queued and 2 cancelled, one requeue brings her to 4,
    the next is a 429 that writes nothing, and a bulk requeue lists the over-quota jobs as refused."""
    async with api_on(sections=QUOTAS) as api:
        body = {"jobs": [job_spec(f"a{n}") for n in range(4)]}
        ids = (await api.http.post("/v1/jobs", json=body, headers=api.auth("alice"))).json()["ids"]
        for job_id in ids[:2]:
            assert (await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).status_code == 200
        assert (await api.http.post("/v1/jobs", json=job_spec("a4"), headers=api.auth("alice"))).status_code == 201

        first = await api.http.post(f"/v1/jobs/{ids[0]}/requeue", headers=api.auth("alice"))
        assert first.status_code == 200 and first.json()["state"] == "Pending", first.text
        revision = await api.store.revision()
        over = await api.http.post(f"/v1/jobs/{ids[1]}/requeue", headers=api.auth("alice"))
        assert over.status_code == 429, over.text
        assert "was not requeued" in over.json()["error"] and "quota of 4 unfinished jobs" in over.json()["error"]
        assert await api.store.revision() == revision

        bulk = await api.http.post(
            "/v1/jobs/actions", json={"action": "requeue", "state": "Cancelled"}, headers=api.auth("alice")
        )
        assert bulk.status_code == 200, bulk.text
        assert (bulk.json()["changed"], bulk.json()["refused"]) == (0, 1)
        assert bulk.json()["refusals"][0]["id"] == ids[1] and "quota" in bulk.json()["refusals"][0]["message"]
        admin = await api.http.post(f"/v1/jobs/{ids[1]}/requeue", headers=api.auth("admin"))
        assert admin.status_code == 200, admin.text  # an admin's requeue is not held to the tenant's quota


async def test_a_store_past_its_budget_refuses_new_work_with_503(api_on: ApiFactory) -> None:
    async with api_on(sections={"store": {"budgetBytes": 20_000}}) as api:
        revision = await api.store.revision()
        body = {"jobs": [job_spec(f"j{n}") for n in range(50)]}

        response = await api.http.post("/v1/jobs", json=body, headers=api.auth("alice"))

        assert response.status_code == 503, response.text
        assert "store nearly full" in response.json()["error"] and "store.budgetBytes" in response.json()["error"]
        assert await api.store.revision() == revision
        assert (await api.http.get("/v1/jobs", headers=api.auth("alice"))).status_code == 200


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__(clock=ManualClock(START))
        self.ranges = 0

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]:
        self.ranges += 1
        return await super().range(prefix, limit=limit)


async def test_the_ledger_counts_accepted_submits_without_summing_again_until_it_is_stale() -> None:
    store = CountingStore()
    clock = ManualClock(START)
    ledger = QuotaLedger(store, clock)
    tree = QueueTree(QueueTreeConfig.model_validate(QUEUE_TREE))
    assert await ledger.usage(tree, "alice") == Usage()
    scans = store.ranges
    ledger.accepted("alice", Usage(2, 4, 100))

    assert await ledger.usage(tree, "alice") == Usage(2, 4, 100)
    assert store.ranges == scans  # no second sum while fresh
    assert await ledger.usage(tree, "alice", fresh=True) == Usage()  # the store holds none of them
    await store.close()


class SlowStore(MemoryStore):
    """Each read takes ``step`` seconds of the manual clock: a tenant whose usage is slow to sum."""

    def __init__(self, clock: ManualClock, step: float) -> None:
        super().__init__(clock=ManualClock(START))
        self.clock, self.step, self.reads = clock, step, 0

    async def snapshot(self, start: str, *, limit: int = 0, end: str | None = None, revision: int = 0) -> StoreSnapshot:
        self.reads += 1
        self.clock.advance(self.step)
        return await super().snapshot(start, limit=limit, end=end, revision=revision)


async def test_a_slow_sum_is_redone_after_twenty_times_what_it_took_not_every_ten_seconds() -> None:
    """A sum that takes ``took`` seconds is due again after max(USAGE_FRESH_FOR, took / SUM_SHARE): with
    SUM_SHARE 0.05 a background sum holds at most 5 % of the replica's time, whatever the tenant holds."""
    clock = ManualClock(START)
    store = SlowStore(clock, step=0.1)
    ledger = QuotaLedger(store, clock)
    tree = QueueTree(QueueTreeConfig.model_validate(QUEUE_TREE))
    began = clock.now()
    await ledger.usage(tree, "alice")
    took = clock.now() - began
    per_sum = store.reads
    assert took / SUM_SHARE > USAGE_FRESH_FOR  # slow enough for the share to matter: e.g. 12 reads, 1.2 s, 24 s
    clock.advance(began + took / SUM_SHARE - clock.now() - 0.5)  # just before it is due
    await ledger.usage(tree, "alice")
    await asyncio.sleep(0)
    assert store.reads == per_sum, "summed again before its share allowed"
    clock.advance(1.0)
    await ledger.usage(tree, "alice")  # due: starts a sum in the background
    for _ in range(10 * per_sum):
        await asyncio.sleep(0)
    assert store.reads == 2 * per_sum
    await store.close()


async def test_a_job_that_moves_on_while_its_tenant_is_summed_counts_once(
    api_on: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sum reads the tenant's index a state at a time, in key order (Admitted, Dispatched, Pending, ...,
    Running). A job that goes from Dispatched to Running once the Dispatched range is read sits in a range
    read later too: read each at the latest revision, it counted twice (2 jobs, 4 tasks). Read at one
    revision, it counts once: 1 job of 2 tasks (``job_spec``: one task of 2 replicas)."""
    async with api_on() as api:
        response = await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))
        assert response.status_code == 201, response.text
        job_id = response.json()["id"]
        repository = JobRepository(api.store)
        await jobflow.advance(repository, job_id, JobState.DISPATCHED, api.clock.now())
        dispatched = keys.tenant_index("alice", keys.index_prefix(JobState.DISPATCHED.value))
        real, moved = api.store.snapshot, []

        async def read(prefix: str, **kwargs: Any) -> Any:
            found = await real(prefix, **kwargs)
            if prefix.startswith(dispatched) and not moved:
                moved.append(job_id)
                await jobflow.report(repository, job_id, JobState.RUNNING, api.clock.now())
            return found

        monkeypatch.setattr(api.store, "snapshot", read)
        used = await tenant_usage(api.store, await api.app.state.fedq.queues.get(), "alice")

        assert moved == [job_id], "the job did not move while the sum was read"
        assert (used.jobs, used.tasks) == (1, 2)
