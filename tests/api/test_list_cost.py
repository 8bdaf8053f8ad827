"""What listing and a quota sum cost in the store, counted as etcd 3.5 pays it: every key from a read's
start to its end, which it walks to count them, limit or not (etcd-io/etcd#16510). A page must cost
one queue's keys at most, a tenant's listing and quota sum that tenant's jobs, however many others the
store holds (issue 35: at 1,000,000 jobs the first page took 14.5x its time at 100,000, and a tenant's
listing of 9,840 jobs 27.9 s).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from federation import keys
from federation.jobs import JobRepository, expand
from federation.models import JobManifest, JobRecord, JobState
from federation.quotas import tenant_usage
from federation.reports.facts import JobFacts
from federation.store import Op, Store
from federation.tenant_index import ensure_tenant_index
from tests.api.conftest import ApiFactory
from tests.api.support import Api, job_spec
from tests.jobflow import advance

QUEUES = ("research.vision", "research.nlp", "scratch.default")
OTHERS = 600  # bob's jobs in every queue and state
ALICES = 12  # alice's, in research.vision


class Walks:
    """The keys each of a store's range reads walks (from its start to its end, as etcd counts them)."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walked: list[int] = []
        real, whole = store.snapshot, store.range

        async def spied(prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0) -> Any:
            self.walked.append(len((await real(prefix, end=end, revision=revision)).kvs))
            return await real(prefix, limit=limit, end=end, revision=revision)

        async def ranged(prefix: str, *, limit: int = 0) -> Any:
            self.walked.append(len(await whole(prefix)))
            return await whole(prefix, limit=limit)

        monkeypatch.setattr(store, "snapshot", spied)
        monkeypatch.setattr(store, "range", ranged)


def records(tenant: str, count: int, queues: tuple[str, ...], now: float) -> list[JobRecord]:
    """``count`` one-job records of ``tenant`` spread over ``queues``, every other one Running."""
    made = []
    for number in range(count):
        manifest = JobManifest.model_validate(job_spec(f"{tenant}-{number}", queue=queues[number % len(queues)]))
        record = expand(manifest, tenant, now)[0]
        made.append(record.model_copy(update={"state": JobState.RUNNING}) if number % 2 else record)
    return made


async def crowded(api: Api) -> list[JobRecord]:
    """Alice's few jobs among many of bob's; returns alice's."""
    now = api.clock.now()
    alices = records("alice", ALICES, ("research.vision",), now)
    await JobRepository(api.store).create([*records("bob", OTHERS, QUEUES, now), *alices])
    return alices


async def listing(api: Api, who: str, limit: int) -> tuple[list[str], int]:
    """Every id of a listing, following ``continue``, and how many pages it took."""
    params: dict[str, Any] = {"limit": limit}
    found: list[str] = []
    for pages in range(1, 1000):
        body = (await api.http.get("/v1/jobs", params=params, headers=api.auth(who))).json()
        found += [item["id"] for item in body["items"]]
        if body["continue"] is None:
            return found, pages
        params["continue"] = body["continue"]
    raise AssertionError("the listing never ended")


async def test_the_first_page_walks_one_queue_of_the_index_not_all_of_it(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    await crowded(api)
    walks = Walks(api.store, monkeypatch)

    response = await api.http.get("/v1/jobs", params={"limit": 10}, headers=api.auth("admin"))

    largest = OTHERS // len(QUEUES) // 2 + ALICES  # bob's Pending jobs of one queue, and alice's
    print(f"the first page's reads walked {walks.walked} keys (one queue and state holds {largest} at most)")
    assert response.status_code == 200 and len(response.json()["items"]) == 10
    assert max(walks.walked) <= largest, f"a read walked {max(walks.walked)} keys of {OTHERS + ALICES}"
    assert len(walks.walked) == 1, "the empty states and queues before the first job were read one by one"


async def test_a_tenants_whole_listing_walks_its_own_jobs(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    alices = await crowded(api)
    walks = Walks(api.store, monkeypatch)

    listed, pages = await listing(api, "alice", 5)

    print(f"alice's listing of {len(listed)} jobs in {pages} pages walked {sum(walks.walked)} keys")
    assert sorted(listed) == sorted(record.id for record in alices)
    assert sum(walks.walked) <= ALICES * 2, f"walked {sum(walks.walked)} keys for {ALICES} jobs"


async def test_a_quota_sum_walks_the_tenants_jobs_not_its_queues(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    await crowded(api)
    tree = await api.app.state.fedq.queues.get()
    walks = Walks(api.store, monkeypatch)

    used = await tenant_usage(api.store, tree, "alice")

    print(f"alice's quota sum ({used.jobs} jobs) walked {sum(walks.walked)} keys")
    assert used.jobs == ALICES and used.tasks == 2 * ALICES
    assert sum(walks.walked) <= ALICES, f"walked {sum(walks.walked)} keys for {ALICES} jobs"


async def test_explain_places_a_job_in_its_queue_without_reading_the_queue_again(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job's place in its queue (no leader has published a line) counts the jobs ahead of it by priority
    and submit time; after the first explain of that queue, later ones read none of it, and still see a
    job submitted ahead of it since."""
    alices = await crowded(api)
    waiting = next(record.id for record in reversed(alices) if record.state is JobState.PENDING)

    async def place() -> int:
        response = await api.http.get(f"/v1/jobs/{waiting}/explain", headers=api.auth("alice"))
        assert response.status_code == 200, response.text
        return int(response.json()["position"]["in_queue"])

    first = await place()
    urgent = job_spec("urgent", priority=5)
    assert (await api.http.post("/v1/jobs", json=urgent, headers=api.auth("alice"))).status_code == 201
    walks = Walks(api.store, monkeypatch)
    then = await place()

    print(f"in line {first}, then {then} after an urgent submit; the second explain walked {sum(walks.walked)} keys")
    assert first == ALICES // 2  # its own Pending jobs before it; bob's, made after alice's, are behind
    assert then == first + 1
    assert sum(walks.walked) == 0, f"the second explain walked {sum(walks.walked)} keys"


async def test_a_store_from_before_the_tenant_index_gets_it_once(api: Api) -> None:
    """Jobs written with their ``view/`` entry alone (as before the tenant index) are listed for their
    tenant once the index is rebuilt, and a second start copies nothing."""
    alices = records("alice", 3, ("research.vision",), api.clock.now())
    ops = [
        op
        for record in alices
        for op in (
            Op.put(keys.job(record.id), record.to_bytes()),
            Op.put(keys.job_index(record.state.value, record.queue, record.id), json.dumps(record.summary()).encode()),
        )
    ]
    await api.store.txn([], ops, [])
    await api.store.delete(keys.INDEX_VERSION)  # whatever this API found at its start

    before, _ = await listing(api, "alice", 10)
    copied = await ensure_tenant_index(api.store)
    after, _ = await listing(api, "alice", 10)

    assert before == []
    assert copied == 3 and sorted(after) == sorted(record.id for record in alices)
    assert await ensure_tenant_index(api.store) == 0


async def test_the_queue_view_counts_once_then_follows_the_index(
    api_on: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first queue view counts each leaf's ranges in the store; later ones walk no key however many
    jobs there are, and still count every change since (a submit, jobs moving on)."""
    async with api_on() as api:
        await crowded(api)
        walked: list[int] = []
        real = api.store.txn

        async def spied(compares: Any, success: Any, failure: Any = ()) -> Any:
            counted = [op.key for op in success if op.kind == "count"]
            walked.append(sum([len(await api.store.range(prefix)) for prefix in counted]))
            return await real(compares, success, failure)

        monkeypatch.setattr(api.store, "txn", spied)

        async def view() -> dict[str, tuple[int, int]]:
            response = await api.http.get("/v1/queues", headers=api.auth("admin"))
            assert response.status_code == 200, response.text
            flat = {}
            for top in response.json()["queues"]:
                flat.update({leaf["path"]: (leaf["pending"], leaf["running"]) for leaf in top["children"]})
            return flat

        first = await view()
        walked.clear()
        response = await api.http.post("/v1/jobs", json=job_spec("one-more"), headers=api.auth("alice"))
        assert response.status_code == 201, response.text
        again = await view()
        await advance(JobRepository(api.store), response.json()["id"], JobState.RUNNING, api.clock.now())
        moved = await view()

        print(f"the first view walked the index; the next two walked {sum(walked)} keys")
        vision = (OTHERS // 6 + ALICES // 2, OTHERS // 6 + ALICES // 2)
        assert (first["research.vision"], again["research.vision"], moved["research.vision"]) == (
            vision,
            (vision[0] + 1, vision[1]),
            (vision[0], vision[1] + 1),
        )
        assert sum(walked) == 0, f"the next views walked {sum(walked)} keys"


async def test_a_quota_report_reads_the_index_and_parses_only_jobs_out_of_the_queue(
    api_on: ApiFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quota report reads the tenant index, never a job record, and parses only the entries of jobs that
    left the queue; queued ones are counted from their keys. Before, it decoded every record in pages of
    500, each of which etcd 3.5 walked to the end of the range: 36.7 s at 300,000 jobs, and at 1,000,000
    ``bench/scale.py`` never got past it (issue 35)."""
    async with api_on() as api:
        await crowded(api)
        read: list[str] = []
        real_pages, real_snapshot, real_of = api.store.pages, api.store.snapshot, JobFacts.__dict__.get("of_view")

        def pages(prefix: str, *, end: str | None = None) -> Any:
            read.append(prefix)
            return real_pages(prefix, end=end)

        async def snapshot(prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0) -> Any:
            read.append(prefix)
            return await real_snapshot(prefix, limit=limit, end=end, revision=revision)

        parsed: list[bytes] = []

        def of_view(raw: bytes) -> JobFacts:
            parsed.append(raw)
            return real_of.__func__(raw)  # type: ignore[union-attr]

        monkeypatch.setattr(api.store, "pages", pages)
        monkeypatch.setattr(api.store, "snapshot", snapshot)
        monkeypatch.setattr(JobFacts, "of_view", staticmethod(of_view), raising=False)

        response = await api.http.get("/v1/reports/quota", headers=api.auth("admin"))

        assert response.status_code == 200, response.text
        report = response.json()
        print(f"the report read {sorted(set(read))} and parsed {len(parsed)} of {OTHERS + ALICES} index entries")
        assert not [prefix for prefix in read if prefix.startswith(keys.JOBS)], f"it read job records: {read}"
        # By hand from ``records``: every odd-numbered job Running, the even ones Pending; bob's jobs go
        # round the three queues, so research.vision holds 200 of bob's (100 Running) and alice's 12.
        tenants = {row["tenant"]: (row["running"], row["pending"]) for row in report["tenants"]}
        queues = {row["queue"]: (row["running"], row["pending"]) for row in report["queues"]}
        assert tenants["alice"] == (6, 6) and tenants["bob"] == (300, 300)
        assert queues["research.vision"] == (106, 106) and queues["research"] == (206, 206)
        assert queues["scratch.default"] == (100, 100)
        assert len(parsed) == 306, "the queued jobs' entries were parsed, not counted"
