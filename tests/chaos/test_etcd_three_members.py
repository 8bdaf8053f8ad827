"""Submits and dispatch on a three-member etcd through what befalls its members (issue 35, acceptance 2):
the member the API is connected to, then the etcd leader, SIGKILLed while a submit txn is out and each
started again while submits go on; every member killed at once and started again on the same data
dirs; etcd's leadership moved again and again (``etcdctl move-leader``'s call) while submits and
dispatch go on. Single and bulk submits stream in through the API, each request retried with its
Idempotency-Key until a 201; every acknowledged job is stored once, dispatched once by the real
scheduler service and ends, and the scheduler dispatches again within a bound after each event.

The API (``tests/api/conftest.py``'s ``serving``) and the scheduler service with its simulated agents
(``tests/scheduler/harness.py``) run side by side, each on a connection of its own with the timeouts of
``fedq server``, as in ``fedq server``; they share one manual clock. The scheduler runs a round after
each answer of the API (or ``ROUND_EVERY`` after the last), so jobs are dispatched while more come in.
"""

from __future__ import annotations

import asyncio
import contextlib
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
# Clusters are never lost (a requeue is a second dispatch for another reason than the store); etcd's
# history is never compacted, so that every assignment ever written can be counted at the end.
CONFIG = {"cluster": {"lostAfter": "1h", "requeueAfter": "1h"}, "store": {"compactEvery": "3650d"}}
TICK = 10.0  # manual seconds a round; every job runs one round
ROUND_EVERY = 0.05  # real seconds between rounds when the API answered nothing meanwhile
ROUND_TIMEOUT = 15.0  # real seconds a round may take, an outage included
MAX_ATTEMPTS = 20  # of one request until its 201 (each a few seconds at most)
MAX_ROUNDS = 40  # to let every job end once submits stop
ELECTION_TIMEOUT = 1.0  # etcd's default --election-timeout (1000 ms), which EtcdCluster keeps
# A write a follower forwards to a leader that is handing over is dropped there without a word; the
# follower answers it only at etcd's request timeout (5 s + 2 election timeouts), then the round fails
# and the next one dispatches (so does a write forwarded to a leader that was killed). So the scheduler
# dispatches again within that plus a round (1-2 s with a thousand jobs on the loaded 2-core machine).
REQUEST_TIMEOUT = 5.0 + 2 * ELECTION_TIMEOUT
RESUME_WITHIN = REQUEST_TIMEOUT + 5.0
MOVES = 6  # leader changes while submits stream in
MOVE_EVERY = 0.3  # seconds between one move's end and the next one's start
RESTART_AFTER = 1  # refusals while every member is down before the cluster is started again


def submitting(success: Sequence[Op]) -> bool:
    """A txn of a submit: a single request's, or a bulk one's staging, commit or publish."""
    return any(op.kind == "put" and op.key.startswith((keys.JOBS, keys.STAGED, keys.OPEN_SUBMITS)) for op in success)


class Trap:
    """A store that runs an armed action (a kill) in a thread while its next txn of a kind is out."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._armed: tuple[Callable[[], None], Callable[[Sequence[Op]], bool]] | None = None
        self.fired: list[tuple[float, str]] = []  # when each action started, and what became of its txn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def arm(self, action: Callable[[], None], when: Callable[[Sequence[Op]], bool]) -> None:
        self._armed = (action, when)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        armed = self._armed
        if armed is None or not armed[1](success):
            return await self.store.txn(compares, success, failure)
        self._armed = None
        started = time.monotonic()
        acting = asyncio.get_running_loop().run_in_executor(None, armed[0])
        outcome = "failed"
        try:
            result = await self.store.txn(compares, success, failure)
            outcome = "landed"
            return result
        finally:
            await acting
            self.fired.append((started, outcome))


@dataclass
class Federation:
    """The API and the scheduler on one cluster, and what the stream of submits saw."""

    cluster: EtcdCluster
    api: Api
    api_store: Trap
    scheduler_store: EtcdStore
    harness: Harness
    per_request: int
    acknowledged: list[str] = field(default_factory=list)  # ids, from each request's one 201
    requests: int = 0
    refused: int = 0  # answers other than a 201, each retried
    failed_rounds: list[str] = field(default_factory=list)
    background: list[asyncio.Future[None]] = field(default_factory=list)
    answered: asyncio.Event = field(default_factory=asyncio.Event)  # the API answered: a round may have work
    ended_round: asyncio.Event = field(default_factory=asyncio.Event)  # a new one each round
    rounds: list[tuple[float, float]] = field(default_factory=list)  # start and end of each round that ran through

    def in_background(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a member's restart) in a thread while submits go on."""
        self.background.append(asyncio.get_running_loop().run_in_executor(None, action))

    async def settled(self) -> None:
        await asyncio.gather(*self.background)
        self.background.clear()

    async def schedule(self, stop: asyncio.Event) -> None:
        """The scheduler's loop beside the API, as in ``fedq server`` (its own connection): a round once the
        API answered, or ``ROUND_EVERY`` after the last; one the outage breaks is noted, the next carries on."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                async with asyncio.timeout(ROUND_TIMEOUT):
                    await self.harness.tick(TICK)
                self.rounds.append((started, time.monotonic()))
            except (StoreError, TimeoutError) as error:
                self.failed_rounds.append(type(error).__name__)
            ended, self.ended_round = self.ended_round, asyncio.Event()
            ended.set()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ROUND_EVERY):
                    await self.answered.wait()
            self.answered.clear()

    def resumed(self, since: float) -> float | None:
        """Seconds from ``since`` to the end of the first round begun after it that ran through: the
        scheduler followed the store, led, cycled and dispatched what was pending again."""
        return next((end - since for start, end in self.rounds if start >= since), None)

    async def stream(self, count: int, restart_after: int = 0, restart: Callable[[], None] | None = None) -> None:
        """``count`` requests, each retried with its key until a 201; ``restart`` is started in a thread
        at the ``restart_after``th refusal."""
        refused = 0
        for _ in range(count):
            number, self.requests = self.requests, self.requests + 1
            names = [f"chaos-{number}-{i}" for i in range(self.per_request)]
            jobs = [job_spec(name, tasks=[{"name": "w", "resources": {"cpu": "1"}, "runtime": TICK}]) for name in names]
            body = jobs[0] if len(jobs) == 1 else {"jobs": jobs}
            headers = {**self.api.auth("alice"), "Idempotency-Key": f"request-{number}"}
            for _ in range(MAX_ATTEMPTS):
                response = await self.api.http.post("/v1/jobs", json=body, headers=headers)
                self.answered.set()
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
                    done, _ = await asyncio.wait(self.background, timeout=0.2)
                    for restarted in done:
                        restarted.result()  # a restart that failed fails the test here
            else:
                raise AssertionError(f"request {number} not acknowledged in {MAX_ATTEMPTS} attempts: {response.text}")
        assert restart is None or refused >= restart_after, "the restart was never started: nothing was refused"

    async def records(self) -> dict[str, JobRecord]:
        kvs = await self.scheduler_store.range(keys.JOBS)
        return {kv.key.removeprefix(keys.JOBS): JobRecord.from_bytes(kv.value) for kv in kvs}

    async def drain(self) -> dict[str, JobRecord]:
        """Rounds until every job has ended; the records then."""
        for _ in range(MAX_ROUNDS):
            await self.ended_round.wait()
            try:
                records = await self.records()
            except StoreError:
                continue
            if all(record.state.terminal for record in records.values()):
                return records
        raise AssertionError(f"jobs still unfinished after {MAX_ROUNDS} rounds (failed: {self.failed_rounds})")

    async def assigned(self) -> Counter[str]:
        """How often each job was handed to a cluster, from etcd's whole history of assignment keys (``CONFIG``
        never compacts it), so that a dispatch whose answer was lost counts too."""
        end = await self.scheduler_store.put(f"{keys.ASSIGNMENTS}~end", b"")
        counted: Counter[str] = Counter()
        events = self.scheduler_store.watch(keys.ASSIGNMENTS, start_revision=1, previous=False)
        async with asyncio.timeout(ROUND_TIMEOUT), contextlib.aclosing(events):
            async for event in events:
                if event.revision >= end:
                    return counted
                counted[event.key.rsplit("/", 1)[-1]] += event.type == "put"
        raise AssertionError("the watch of assignments ended")

    async def check(self, records: dict[str, JobRecord]) -> str:
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
        assigned = await self.assigned()
        twice = {job_id: count for job_id, count in assigned.items() if count != 1}
        assert not twice and set(assigned) == acknowledged, f"assigned other than once: {list(twice.items())[:5]}"
        return (
            f"{self.requests} requests of {self.per_request}, {len(records)} jobs stored and dispatched once each, "
            f"{self.refused} answers retried, {len(self.failed_rounds)} scheduler rounds failed"
        )


@asynccontextmanager
async def federation(cluster: EtcdCluster, api_members: Sequence[int], per_request: int) -> AsyncIterator[Federation]:
    """The API connected to ``api_members`` (in that order), the scheduler to every member, two agents."""
    api_store = Trap(EtcdStore(cluster.member_connection(*api_members)))  # the timeouts of `fedq server`
    scheduler_store = EtcdStore(cluster.connection)
    harness = Harness(scheduler_store, CONFIG, QUEUES, start=START)
    try:
        limits = {"maxJobsPerRequest": BULK}
        async with serving(api_store, harness.clock, limits=limits) as api:  # type: ignore[arg-type]
            await harness.join("c1", NODES)
            await harness.join("c2", NODES)
            fed = Federation(cluster, api, api_store, scheduler_store, harness, per_request)
            stop = asyncio.Event()
            scheduling = asyncio.create_task(fed.schedule(stop))
            try:
                yield fed
            finally:
                stop.set()
                await scheduling
    finally:
        await harness.close()
        await api_store.store.close()
        await scheduler_store.close()


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
    killed: list[tuple[str, int]] = []
    async with federation(etcd_cluster, (follower, leader, third), per_request) as fed:
        await fed.stream(2)
        for victim in ("the API's member", "etcd's leader"):
            member = follower if victim == "the API's member" else etcd_cluster.leader()
            fed.api_store.arm(lambda member=member: etcd_cluster.stop_member(member), submitting)
            await fed.stream(2)  # the first of them meets the kill; the rest go to the members left
            fed.in_background(lambda member=member: etcd_cluster.start_member(member))
            await fed.stream(2)  # while it starts again
            await fed.settled()
            await fed.stream(2)
            killed.append((victim, member))
        summary = await fed.check(await fed.drain())
    took = [fed.resumed(fired_at) for fired_at, _ in fed.api_store.fired]
    resumed = [
        f"{victim} (member {member}) killed, its submit txn {outcome}: dispatch {shown(after)} later"
        for (victim, member), (_, outcome), after in zip(killed, fed.api_store.fired, took, strict=True)
    ]
    print("\n" + "; ".join(resumed) + f"; {summary}")
    assert all(t is not None and t < RESUME_WITHIN for t in took), f"dispatch {took} s after the kills"


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

        # Refused until the cluster is back: the request whose txn met the kill, or, when that txn landed
        # before the kill (a 201; under load in CI), the next one.
        await fed.stream(2, restart_after=RESTART_AFTER, restart=restart)
        await fed.settled()
        refused_while_down = fed.refused
        await fed.stream(3)
        summary = await fed.check(await fed.drain())
    fired_at, outcome = fed.api_store.fired[-1]
    took = fed.resumed(restarted_at)
    print(
        f"\nevery member killed (the submit txn {outcome}), {refused_while_down} answers refused, started again "
        f"{restarted_at - fired_at:.2f} s after the kill; dispatch {shown(took)} after it was back; {summary}"
    )
    assert refused_while_down >= RESTART_AFTER, "no request was refused while etcd was down"
    assert took is not None and took < RESUME_WITHIN, f"dispatch {shown(took)} after the restart"


class Mover:
    """etcd's leadership moved on from member to member in a thread, a move every ``MOVE_EVERY``, ``MOVES``
    times; each move's start and end (``time.monotonic``)."""

    def __init__(self, cluster: EtcdCluster) -> None:
        self.cluster = cluster
        self.moves: list[tuple[float, float, int, int]] = []  # start, end, from, to

    def run(self) -> None:
        while len(self.moves) < MOVES:
            started, leader = time.monotonic(), self.cluster.leader()
            to = others(self.cluster, leader)[0]
            self.cluster.move_leader(to)  # returns once ``to`` leads
            self.moves.append((started, time.monotonic(), leader, to))
            time.sleep(MOVE_EVERY)  # pacing, as an operator's moves would be: nothing to wait for


@pytest.mark.parametrize("per_request", [SINGLE, BULK], ids=["single", "bulk"])
async def test_etcd_leader_moved_during_submits_and_dispatch_loses_and_doubles_nothing(
    etcd_cluster: EtcdCluster, per_request: int
) -> None:
    mover = Mover(etcd_cluster)
    async with federation(etcd_cluster, range(len(etcd_cluster.members)), per_request) as fed:
        await fed.stream(2)
        fed.in_background(mover.run)
        while len(mover.moves) < MOVES:  # submits and dispatch go on through every move
            await fed.stream(1)
        await fed.settled()
        await fed.stream(2)  # the last move is followed by dispatch too
        summary = await fed.check(await fed.drain())
    took = [fed.resumed(started) for started, *_ in mover.moves]
    moved = [f"{leader}->{to} in {end - start:.2f} s" for start, end, leader, to in mover.moves]
    slowest = max(took, key=lambda t: float("inf") if t is None else t)
    stalled = sum(t is None or t > ELECTION_TIMEOUT + 4 for t in took)
    print(
        f"\n{len(mover.moves)} moves of etcd's leader ({', '.join(moved)}); dispatch at most {shown(slowest)} "
        f"after a move began ({stalled} moves past the election timeout + 4 s); {summary}"
    )
    assert slowest is not None and slowest < RESUME_WITHIN, f"dispatch {shown(slowest)} after a move began"
