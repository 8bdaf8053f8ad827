"""Submits and dispatch on a three-member etcd through what befalls its members (issue 35, acceptance 2):
the member the API is connected to, then the etcd leader, SIGKILLed while a submit txn is out and each
started again while submits go on; every member killed at once and started again on the same data
dirs; etcd's leadership moved (``etcdctl move-leader``'s call) while a submit txn, then a dispatch txn,
is out. Single and bulk submits stream in through the API, each request retried with its
Idempotency-Key until a 201; every acknowledged job is stored once, dispatched once by the real
scheduler service and ends; dispatch goes on after each event.

The API (``tests/api/conftest.py``'s ``serving``) and the scheduler service with its simulated agents
(``tests/scheduler/harness.py``) each have a connection of their own, as in ``fedq server``, and share
one manual clock; a scheduler round follows every answer of the API, so each request's jobs are
dispatched while the next ones come in.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from federation import keys
from federation.models import JobRecord, JobState
from federation.store import EtcdCluster, EtcdStore, Op, Store, StoreError
from tests.api.conftest import QUEUES, START, serving
from tests.api.support import Api, job_spec
from tests.scheduler.harness import Harness

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

SINGLE, BULK = 1, 80  # 80 jobs are 160 ops: staged, committed, then published in several txns
NODES = [{"count": 4, "resources": {"cpu": 64}}]  # 256 cpus a cluster, two clusters: room for every request
CONFIG = {"cluster": {"lostAfter": "1h", "requeueAfter": "1h"}}  # never lost: a requeue is no double dispatch
TICK = 10.0  # manual seconds a round; every job runs one round
ROUND_TIMEOUT = 15.0  # real seconds a round may take, an outage included
MAX_ATTEMPTS = 60  # of one request until its 201
MAX_ROUNDS = 40  # to let every job end once submits stop
ELECTION_TIMEOUT = 1.0  # etcd's default --election-timeout (1000 ms), which EtcdCluster keeps
RESUME_WITHIN = ELECTION_TIMEOUT + 4.0  # after a leader change, a dispatch txn lands again within this
BACK_WITHIN = 10.0  # after a restart of the whole cluster returns, the same
RESTART_AFTER = 3  # refusals while every member is down before the cluster is started again


def submitting(success: Sequence[Op]) -> bool:
    """A txn of a submit: a single request's, or a bulk one's staging, commit or publish."""
    return any(op.kind == "put" and op.key.startswith((keys.JOBS, keys.STAGED, keys.OPEN_SUBMITS)) for op in success)


def dispatching(success: Sequence[Op]) -> bool:
    return any(op.kind == "put" and op.key.startswith(keys.ASSIGNMENTS) for op in success)


class Trap:
    """A store that runs an armed action (a kill, a leader move) in a thread while its next txn of a kind
    is out, and notes when its dispatch txns land."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._armed: tuple[Callable[[], None], Callable[[Sequence[Op]], bool]] | None = None
        self.fired: list[tuple[float, str]] = []  # when each action started, and what became of its txn
        self.dispatched_at: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def arm(self, action: Callable[[], None], when: Callable[[Sequence[Op]], bool]) -> None:
        self._armed = (action, when)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        armed = self._armed
        if armed is None or not armed[1](success):
            result = await self.store.txn(compares, success, failure)
        else:
            self._armed = None
            started = time.monotonic()
            acting = asyncio.get_running_loop().run_in_executor(None, armed[0])
            outcome = "failed"
            try:
                result = await self.store.txn(compares, success, failure)
                outcome = "landed"
            finally:
                await acting
                self.fired.append((started, outcome))
        if result.succeeded and dispatching(success):
            self.dispatched_at.append(time.monotonic())
        return result

    def resumed(self, since: float) -> float | None:
        """Seconds from ``since`` to the first dispatch txn that landed after it."""
        return next((at - since for at in self.dispatched_at if at > since), None)


@dataclass
class Federation:
    """The API and the scheduler on one cluster, and what the stream of submits saw."""

    cluster: EtcdCluster
    api: Api
    api_store: Trap
    scheduler_store: Trap
    harness: Harness
    per_request: int
    acknowledged: list[str] = field(default_factory=list)  # ids, from each request's one 201
    requests: int = 0
    refused: int = 0  # answers other than a 201, each retried
    failed_rounds: list[str] = field(default_factory=list)
    background: list[asyncio.Future[None]] = field(default_factory=list)

    def in_background(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a member's restart) in a thread while submits go on."""
        self.background.append(asyncio.get_running_loop().run_in_executor(None, action))

    async def settled(self) -> None:
        await asyncio.gather(*self.background)
        self.background.clear()

    async def round(self) -> None:
        """One scheduler round; one the outage breaks is noted, and the next carries on."""
        try:
            async with asyncio.timeout(ROUND_TIMEOUT):
                await self.harness.tick(TICK)
        except (StoreError, TimeoutError) as error:
            self.failed_rounds.append(type(error).__name__)

    async def stream(self, count: int, restart_after: int = 0, restart: Callable[[], None] | None = None) -> None:
        """``count`` requests, each retried with its key until a 201, a round after every answer;
        ``restart`` is started in a thread at the ``restart_after``th refusal."""
        refused = 0
        for _ in range(count):
            number, self.requests = self.requests, self.requests + 1
            names = [f"chaos-{number}-{i}" for i in range(self.per_request)]
            jobs = [job_spec(name, tasks=[{"name": "w", "resources": {"cpu": "1"}, "runtime": TICK}]) for name in names]
            body = jobs[0] if len(jobs) == 1 else {"jobs": jobs}
            headers = {**self.api.auth("alice"), "Idempotency-Key": f"request-{number}"}
            for _ in range(MAX_ATTEMPTS):
                response = await self.api.http.post("/v1/jobs", json=body, headers=headers)
                await self.round()
                if response.status_code == 201:
                    answer = response.json()
                    self.acknowledged += answer.get("ids") or [answer["id"]]
                    break
                assert response.status_code in (409, 503), response.text
                self.refused += 1
                refused += 1
                if restart is not None and refused == restart_after:
                    self.in_background(restart)
                if self.background:  # paced by the restart under way, not a blind sleep
                    await asyncio.wait(self.background, timeout=0.2)
            else:
                raise AssertionError(f"request {number} not acknowledged in {MAX_ATTEMPTS} attempts")

    async def records(self) -> dict[str, JobRecord]:
        kvs = await self.scheduler_store.range(keys.JOBS)
        return {kv.key.removeprefix(keys.JOBS): JobRecord.from_bytes(kv.value) for kv in kvs}

    async def drain(self) -> dict[str, JobRecord]:
        """Rounds until every job has ended; the records then."""
        for _ in range(MAX_ROUNDS):
            await self.round()
            try:
                records = await self.records()
            except StoreError:
                continue
            if all(record.state.terminal for record in records.values()):
                return records
        raise AssertionError(f"jobs still unfinished after {MAX_ROUNDS} rounds (failed: {self.failed_rounds})")

    def check(self, records: dict[str, JobRecord]) -> str:
        """Nothing acknowledged lost, nothing made twice, every job dispatched once and Succeeded; a summary."""
        acknowledged = set(self.acknowledged)
        assert len(acknowledged) == len(self.acknowledged) == self.requests * self.per_request
        lost = acknowledged - set(records)
        assert not lost, f"{len(lost)} of {len(acknowledged)} acknowledged jobs are not in the store"
        twice = [name for name, count in Counter(r.name for r in records.values()).items() if count > 1]
        assert not twice and set(records) == acknowledged, f"jobs made twice by a retried request: {twice[:5]}"
        for job_id, record in records.items():
            dispatches = sum(event.target is JobState.DISPATCHED for event in record.events)
            assert dispatches == 1, f"{job_id} dispatched {dispatches} times: {record.events}"
            assert record.state is JobState.SUCCEEDED, f"{job_id} ended {record.state}"
        return (
            f"{self.requests} requests of {self.per_request}, {len(records)} jobs stored and dispatched once each, "
            f"{self.refused} answers retried, {len(self.failed_rounds)} scheduler rounds failed"
        )


@asynccontextmanager
async def federation(cluster: EtcdCluster, api_members: Sequence[int], per_request: int) -> AsyncIterator[Federation]:
    """The API connected to ``api_members`` (in that order), the scheduler to every member, two agents."""
    api_store = Trap(EtcdStore(cluster.member_connection(*api_members), timeout=3.0, connect_timeout=0.2))
    scheduler_store = Trap(EtcdStore(cluster.connection, timeout=3.0, connect_timeout=0.2))
    harness = Harness(scheduler_store, CONFIG, QUEUES, start=START)  # type: ignore[arg-type]
    try:
        limits = {"maxJobsPerRequest": BULK}
        async with serving(api_store, harness.clock, limits=limits) as api:  # type: ignore[arg-type]
            await harness.join("c1", NODES)
            await harness.join("c2", NODES)
            yield Federation(cluster, api, api_store, scheduler_store, harness, per_request)
    finally:
        await harness.close()
        await api_store.store.close()
        await scheduler_store.store.close()


def shown(took: float | None) -> str:
    return "never" if took is None else f"{took:.2f} s"


def others(cluster: EtcdCluster, member: int) -> list[int]:
    return [i for i in range(len(cluster.members)) if i != member]


@pytest.mark.parametrize("per_request", [SINGLE, BULK], ids=["single", "bulk"])
async def test_the_connected_member_then_the_leader_killed_mid_submit_lose_and_double_nothing(
    etcd_cluster: EtcdCluster, per_request: int
) -> None:
    leader = etcd_cluster.leader()
    follower, third = others(etcd_cluster, leader)
    resumed: list[str] = []
    async with federation(etcd_cluster, (follower, leader, third), per_request) as fed:
        await fed.stream(2)
        for victim in ("the API's member", "etcd's leader"):
            member = follower if victim == "the API's member" else etcd_cluster.leader()
            fed.api_store.arm(lambda member=member: etcd_cluster.stop_member(member), submitting)
            await fed.stream(2)  # the first of them meets the kill; the rest go to the members left
            fired_at, outcome = fed.api_store.fired[-1]
            fed.in_background(lambda member=member: etcd_cluster.start_member(member))
            await fed.stream(2)  # while it starts again
            await fed.settled()
            await fed.stream(2)
            took = fed.scheduler_store.resumed(fired_at)
            resumed.append(f"{victim} (member {member}) killed, its submit txn {outcome}: dispatch after {shown(took)}")
            assert took is not None, f"no dispatch after {victim} was killed"
        summary = fed.check(await fed.drain())
    print("\n" + "; ".join(resumed) + f"; {summary}")


@pytest.mark.parametrize("per_request", [SINGLE, BULK], ids=["single", "bulk"])
async def test_every_member_killed_and_started_again_loses_and_doubles_nothing(
    etcd_cluster: EtcdCluster, per_request: int
) -> None:
    async with federation(etcd_cluster, range(len(etcd_cluster.members)), per_request) as fed:
        await fed.stream(3)
        fed.api_store.arm(lambda: etcd_cluster.stop(kill=True), submitting)
        restarted_at = 0.0

        def restart() -> None:
            nonlocal restarted_at
            etcd_cluster.start()  # every member on its data dir; returns once all are healthy
            restarted_at = time.monotonic()

        await fed.stream(1, restart_after=RESTART_AFTER, restart=restart)  # refused until the cluster is back
        await fed.settled()
        refused_while_down = fed.refused
        await fed.stream(3)
        fired_at, outcome = fed.api_store.fired[-1]
        took = fed.scheduler_store.resumed(restarted_at)
        summary = fed.check(await fed.drain())
    print(
        f"\nevery member killed (the submit txn {outcome}), {refused_while_down} answers refused, started again "
        f"{restarted_at - fired_at:.2f} s after the kill; dispatch {shown(took)} after it was back; {summary}"
    )
    assert refused_while_down >= RESTART_AFTER, "no request was refused while etcd was down"
    assert took is not None and took < BACK_WITHIN, f"dispatch {shown(took)} after the restart ({BACK_WITHIN} s)"


@pytest.mark.parametrize("per_request", [SINGLE, BULK], ids=["single", "bulk"])
async def test_etcd_leader_moved_mid_submit_and_mid_dispatch_loses_and_doubles_nothing(
    etcd_cluster: EtcdCluster, per_request: int
) -> None:
    moves: list[str] = []
    async with federation(etcd_cluster, range(len(etcd_cluster.members)), per_request) as fed:
        await fed.stream(2)
        for store, kind in ((fed.api_store, submitting), (fed.scheduler_store, dispatching)):
            before = etcd_cluster.leader()
            to = others(etcd_cluster, before)[0]
            store.arm(lambda to=to: etcd_cluster.move_leader(to), kind)
            await fed.stream(3)
            fired_at, outcome = store.fired[-1]
            took = fed.scheduler_store.resumed(fired_at)
            moves.append(f"{kind.__name__}: leader {before} -> {etcd_cluster.leader()}, txn {outcome}, {shown(took)}")
            assert etcd_cluster.leader() == to, "etcd's leadership did not move"
            assert took is not None and took < RESUME_WITHIN, f"dispatch {shown(took)} after ({RESUME_WITHIN} s)"
        summary = fed.check(await fed.drain())
    print("\n" + "; ".join(moves) + f"; {summary}")
