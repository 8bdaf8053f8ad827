"""A bulk submit whose commit is cut short (issue 33, point 2): every id a 201 answered is readable,
listed and in the leader's state within seconds, with no further request, and a request committed by
a replica that died before publishing it is published by the federation itself.

2,000 jobs in one keyed request are staged, committed in one txn, then published in 32 txns. In the
first test the API's store SIGKILLs etcd (the single member, or the leader of three) from a thread
while the 8th publish txn is out, and the test starts it again 3 s later. In the second, the API
replica dies right after its commit txn (nothing after it runs), and etcd stays up. A real scheduler
service leads beside the API on its own connection, as in ``fedq server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from federation import keys
from federation.config import FederationConfig
from federation.scheduler.service import SchedulerService
from federation.store import EtcdCluster, EtcdConnection, EtcdServer, EtcdStore, Op, Store, StoreError
from policies.clock import SystemClock
from tests.api.conftest import serving
from tests.api.support import Api, job_spec

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

JOBS = 2000
DOWN_FOR = 3.0  # seconds etcd stays killed, as in the issue
VISIBLE_WITHIN = 10.0  # seconds, once etcd is back (or the replica is gone), for every job to be seen everywhere
ANSWER_WITHIN = 60.0
KILL_AT = 8  # etcd dies while the 8th of the 32 publish txns is out (four go at once): part is published
LIMITS = {"maxJobsPerRequest": JOBS, "maxBodyBytes": 4 << 20}


@dataclass
class Etcd:
    """Where the API and the scheduler connect, and how to kill and restart the member the API talks to."""

    name: str
    connection: EtcdConnection
    kill: Callable[[], None]
    restart: Callable[[], None]


@pytest.fixture(params=["single", "three"])
def etcd(request: pytest.FixtureRequest) -> Iterator[Etcd]:
    if request.param == "single":
        with EtcdServer(clock=SystemClock()) as server:
            yield Etcd("one member", server.connection, lambda: server.stop(kill=True), server.start)
        return
    cluster: EtcdCluster = request.getfixturevalue("etcd_cluster")
    leader = cluster.leader()
    others = [i for i in range(len(cluster.members)) if i != leader]
    # The API is connected to the leader first, so the kill cuts the publish txns it has out.
    connection = cluster.member_connection(leader, *others)
    yield Etcd(
        "leader of three killed", connection, lambda: cluster.stop_member(leader), lambda: cluster.start_member(leader)
    )


def _publishes(success: Sequence[Op]) -> bool:
    return any(op.kind == "put" and op.key.startswith(keys.JOBS) for op in success)


def _commit(success: Sequence[Op]) -> Op | None:
    """The put of a journal's committed state, if the txn commits a request."""
    puts = [op for op in success if op.kind == "put" and op.key.startswith(keys.OPEN_SUBMITS)]
    return next((op for op in puts if json.loads(op.value)["state"] == "committed"), None)


class CutShort:
    """The API's store. ``kill``: etcd is killed from a thread while the ``KILL_AT``th publish txn is out;
    ``die``: the replica dies as its commit txn returns (the call never returns; the test ends the request)."""

    def __init__(self, store: Store, kill: Callable[[], None] | None = None, die: bool = False) -> None:
        self.store = store
        self.kill = kill
        self.die = die
        self.fired = False
        self.killed_at = 0.0  # time.monotonic() once the kill is done
        self.cut = asyncio.Event()  # etcd was killed, or the replica died
        self.committed: list[str] = []  # the ids in the answer of the commit txn the replica died after
        self._publishing = itertools.count(1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        kill = self.kill
        if kill is not None and _publishes(success) and next(self._publishing) == KILL_AT:
            self.kill, self.fired = None, True
            loop = asyncio.get_running_loop()

            def kill_and_note() -> None:  # noted from the thread: the txn may be cancelled while the kill goes on
                kill()
                loop.call_soon_threadsafe(self._killed)

            killing = loop.run_in_executor(None, kill_and_note)
            try:
                return await self.store.txn(compares, success, failure)
            finally:
                await killing
        result = await self.store.txn(compares, success, failure)
        if self.die and result.succeeded and (commit := _commit(success)) is not None:
            self.committed = list(json.loads(commit.value)["answer"]["ids"])
            self.fired = True
            self.cut.set()
            await asyncio.Event().wait()  # dead: nothing after the commit runs
        return result

    def _killed(self) -> None:
        self.killed_at = time.monotonic()
        self.cut.set()


@asynccontextmanager
async def federation(api_store: Store, connection: EtcdConnection) -> AsyncIterator[tuple[Api, SchedulerService]]:
    """The API over ``api_store`` and a leading scheduler on a connection of its own."""
    clock = SystemClock()
    scheduler_store = EtcdStore(connection, timeout=3.0, connect_timeout=0.2)
    service = SchedulerService(scheduler_store, FederationConfig(), clock, leader_ttl=2.0)
    stop = asyncio.Event()
    loop = asyncio.create_task(service.run(stop))
    try:
        async with serving(api_store, clock, limits=LIMITS) as api:  # type: ignore[arg-type]
            yield api, service
    finally:
        stop.set()
        await loop
        await scheduler_store.close()


async def _post(api: Api, key: str) -> tuple[int, list[str], float]:
    """The answer's status, its ids (for a 201) and when it came (``time.monotonic``)."""
    body = {"jobs": [job_spec(f"bulk-{i}") for i in range(JOBS)]}
    headers = {**api.auth("alice"), "Idempotency-Key": key}
    response = await api.http.post("/v1/jobs", params={"allowUnschedulable": "true"}, json=body, headers=headers)
    ids = list(response.json().get("ids", [])) if response.status_code == 201 else []
    return response.status_code, ids, time.monotonic()


@dataclass
class Seen:
    """How many of the request's jobs each reader sees."""

    stored: int
    listed: int
    in_leader: int
    read: int  # of a sample read one by one through GET /v1/jobs/{id}
    sampled: int
    unfinished: int  # keys of open journals and staged chunks

    def all_of(self, total: int) -> bool:
        everywhere = self.stored == self.listed == self.in_leader == total and self.read == self.sampled
        return everywhere and not self.unfinished


async def _seen(api: Api, reader: Store, service: SchedulerService, ids: list[str]) -> Seen:
    wanted = set(ids)
    try:
        stored = len(wanted & {kv.key.removeprefix(keys.JOBS) for kv in await reader.range(keys.JOBS)})
        unfinished = len(await reader.range(keys.OPEN_SUBMITS)) + len(await reader.range(keys.STAGED))
    except StoreError:
        stored, unfinished = 0, -1
    listed: set[str] = set()
    page: dict[str, Any] = {"continue": ""}
    while page["continue"] is not None:
        params = {"limit": "10000", **({"continue": page["continue"]} if page["continue"] else {})}
        response = await api.http.get("/v1/jobs", params=params, headers=api.auth("alice"))
        if response.status_code != 200:
            break
        page = response.json()
        listed.update(item["id"] for item in page["items"])
    state = service.state
    in_leader = 0 if state is None else sum(job_id in state.pending for job_id in ids)
    sample = ids[:: len(ids) // 20]
    read = 0
    for job_id in sample:
        read += (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).status_code == 200
    return Seen(stored, len(wanted & listed), in_leader, read, len(sample), unfinished)


async def _watch_until_all_seen(
    api: Api, reader: Store, service: SchedulerService, ids: list[str]
) -> tuple[Seen, float]:
    """Look (and only look) until every reader sees every job or ``VISIBLE_WITHIN`` passes."""
    started = time.monotonic()
    seen = await _seen(api, reader, service, ids)
    while not seen.all_of(len(ids)) and time.monotonic() - started < VISIBLE_WITHIN:
        await asyncio.sleep(0.2)  # polled: nothing tells a reader that the federation finished the publish
        seen = await _seen(api, reader, service, ids)
    return seen, time.monotonic() - started


async def _cut(store: CutShort, posting: asyncio.Task[Any]) -> None:
    """Wait until the request was cut short: its kill done, or its replica dead."""
    cut = asyncio.create_task(store.cut.wait())
    await asyncio.wait([cut, posting], timeout=ANSWER_WITHIN, return_when=asyncio.FIRST_COMPLETED)
    if store.fired:  # the request may end while the kill is under way
        await asyncio.wait([cut], timeout=ANSWER_WITHIN)
    cut.cancel()
    assert store.cut.is_set(), f"the request ended before it was cut short: {posting}"


async def test_a_201_for_a_bulk_submit_cut_short_by_an_etcd_kill_means_every_job_is_seen(etcd: Etcd) -> None:
    loop = asyncio.get_running_loop()
    api_store = CutShort(EtcdStore(etcd.connection, timeout=3.0, connect_timeout=0.2), kill=etcd.kill)
    reader = EtcdStore(etcd.connection, timeout=3.0)
    try:
        async with federation(api_store, etcd.connection) as (api, service):
            posting = asyncio.create_task(_post(api, "bulk-1"))
            await _cut(api_store, posting)
            await asyncio.sleep(DOWN_FOR)
            await loop.run_in_executor(None, etcd.restart)
            back = time.monotonic() - api_store.killed_at
            async with asyncio.timeout(ANSWER_WITHIN):
                status, ids, answered_at = await posting
            answered = answered_at - api_store.killed_at
            # etcd was back within seconds: the request is acknowledged
            assert status == 201 and len(ids) == JOBS, f"answered {status} {answered:.2f} s after the kill"
            seen_at_answer = await _seen(api, reader, service, ids)
            seen, took = await _watch_until_all_seen(api, reader, service, ids)
    finally:
        await reader.close()
        await api_store.store.close()
    print(
        f"\n{etcd.name}: answered {status} with {len(ids)} ids {answered:.2f} s after the kill (etcd back at "
        f"{back:.2f} s); once both, {seen_at_answer}; {took:.1f} s later {seen}"
    )
    assert seen_at_answer.stored == JOBS, f"a 201 went out with {seen_at_answer.stored} of {JOBS} jobs published"
    assert seen.all_of(JOBS), f"{took:.1f} s after the 201 only {seen} of {JOBS} jobs are seen"


async def test_a_request_committed_by_a_replica_that_died_is_published_by_the_federation() -> None:
    with EtcdServer(clock=SystemClock()) as server:
        api_store = CutShort(EtcdStore(server.connection, timeout=3.0), die=True)
        reader = EtcdStore(server.connection, timeout=3.0)
        try:
            async with federation(api_store, server.connection) as (api, service):
                posting = asyncio.create_task(_post(api, "bulk-1"))
                await _cut(api_store, posting)
                posting.cancel()  # the replica's process is gone: so is the request's connection
                with contextlib.suppress(asyncio.CancelledError):
                    await posting
                assert len(api_store.committed) == JOBS
                seen, took = await _watch_until_all_seen(api, reader, service, api_store.committed)
        finally:
            await reader.close()
            await api_store.store.close()
    print(f"\nthe replica died after its commit: {took:.1f} s later {seen}")
    assert seen.all_of(JOBS), f"{took:.1f} s after the commit only {seen} of {JOBS} jobs are seen"
