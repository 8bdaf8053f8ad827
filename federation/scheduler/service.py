"""The scheduler as a service: mirror the store into memory, elect a leader, cycle, commit.

Every replica loads the store once (one snapshot), then follows a watch from the snapshot's
revision, so every change is applied incrementally and none is missed. Only the leader schedules;
the others stand by with the state warm, so a takeover costs the lease's expiry, not a reload of
every job. Each cycle the leader takes its turn (``federation.scheduler.turn``: requeues, dependencies
never met, the plan's dispatches, marks and evictions) through a port that commits to the store,
publishes what ``fedq explain`` needs under ``status/scheduler``, and keeps the store bounded (``upkeep``).
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import aclosing
from functools import partial
from time import perf_counter
from typing import Any

import structlog

from federation import keys
from federation.accounting import Accountant
from federation.accounting.feed import UsageFeed
from federation.collector import loading
from federation.config import FederationConfig
from federation.leader import LeaderElection
from federation.lifecycle import usage
from federation.models import JobRecord, QueueTree, QueueTreeConfig
from federation.models.cluster import ClusterRecord, LatestReport
from federation.reports.source import queue_half_lives
from federation.scheduler.cycle import CyclePlan
from federation.scheduler.dispatch import Committer, Deposed, StorePort
from federation.scheduler.health import LoopHealth
from federation.scheduler.metrics import SchedulerMetrics
from federation.scheduler.state import FederationState
from federation.scheduler.status import failing_body, status_of
from federation.scheduler.turn import Turn
from federation.scheduler.upkeep import StoreUpkeep
from federation.store import CompactedError, KeyValue, Store, StoreError, StoreUnavailable, WatchEvent
from policies.clock import Clock

log = structlog.get_logger("fedq.scheduler")

DEBOUNCE = 0.05
LOAD_ATTEMPTS = 3  # reads of the store a compaction may cut short before a load gives up
SYNC_WITHIN = 10.0
"""Seconds a ``sync`` waits for its own write to come through the watch. The loop that syncs is the one
that would load the store again, so a watch that died, or that delivers nothing while the store takes
writes (a stream left open that no longer sends), would hold it for ever, the lease kept alive by its
keeper: the watch and the state it fed are dropped instead, and the next turn loads a fresh one."""


class NotFollowing(RuntimeError):
    """The scheduler holds no state: it has not loaded the store yet, or it was closed."""


class SchedulerService:
    def __init__(
        self,
        store: Store,
        config: FederationConfig,
        clock: Clock,
        *,
        identity: str | None = None,
        leader_ttl: float = 5.0,
        save_every: float | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.election = LeaderElection(store, ttl=leader_ttl, identity=identity)
        self.metrics = metrics if metrics is not None else SchedulerMetrics()
        self.upkeep = StoreUpkeep(store, config.store, clock, self.metrics.defragmentations.inc)
        self.state: FederationState | None = None
        self.committer: Committer | None = None
        self.port: StorePort | None = None
        self.accountant = Accountant(clock, config.fairshare.half_life, config.fairshare.usage_weights)
        self.turn = Turn(config, clock, self.accountant)
        self.save_every = config.accounting_save_every if save_every is None else save_every
        self._saved_at = float("-inf")
        self.leading = False  # took over as leader: the accountant holds this leadership's usage
        self.feed = UsageFeed(self.accountant, store, clock, self._mark)
        self._watch: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._published = b""
        self._status: bytes | None = None  # the status last written, which a failing loop adds to
        self.health = LoopHealth()
        self.applied_revision = 0
        self._syncs: list[tuple[int, asyncio.Future[None]]] = []  # (revision, waiter) for sync()

    # ---- loading and following the store -----------------------------------------------------

    async def follow(self) -> None:
        """Hold the store's state in memory: load it unless it is held (or was dropped by a dead watch)."""
        if self.state is None:
            await self.load()

    async def load(self) -> None:
        """The store's state in memory, then a watch that keeps it up to date.

        A reload while leading (after the watch died) keeps the accounting in memory, which is newer
        than the saved one; the job changes it missed are counted from the store's history (or, if
        that is compacted, from the loaded jobs' starts and ends).
        """
        # The loaded state lives as long as the process follows the store (``loading``).
        with loading():
            for attempt in range(1, LOAD_ATTEMPTS + 1):
                try:
                    state, revision = await self._read()
                    break
                except CompactedError:
                    if attempt == LOAD_ATTEMPTS:
                        raise
        self.state = state
        self.applied_revision = revision
        self.committer = Committer(self.store, state, self._fence)
        self.port = StorePort(self.committer, lambda record: self.feed.apply(usage(record)))
        self._watch = asyncio.create_task(self._follow(revision + 1))
        self._release_syncs()  # a reload after a dead watch holds every write up to its snapshot
        log.info("scheduler state loaded", jobs=len(state.entries), pending=len(state.pending))

    async def _read(self) -> tuple[FederationState, int]:
        """A state built from the store page by page as etcd serves them, and its revision.

        Leading, the job changes the accounting missed are counted from the history (up to the read's
        revision, known from its first page) before any record is applied, so that applying them
        counts only what the history did not. A read a compaction cuts short leaves the accounting as
        counted so far, with ``applied_revision`` moved to match, for the next read to go on from."""
        state = FederationState()
        counted, applied = self.accountant.running(), self.applied_revision
        revision: int | None = None
        replayed = False
        try:
            async with aclosing(self.store.pages(keys.FOLLOWED_FROM, end=keys.FOLLOWED_TO)) as pages:
                async for page in pages:
                    if revision is None:
                        revision = page.revision
                        replayed = self.leading and await self.feed.replay(applied, partial(int, revision))
                    for kv in page.kvs:
                        self._apply_kv(state, kv)
        except CompactedError:
            if replayed:
                self.applied_revision = self.feed.counted_to
            raise
        assert revision is not None  # a range read always answers a first page
        state.settle()
        if self.leading and not replayed:
            await self.feed.catch_up(state, counted, applied)
        return state, revision

    async def _follow(self, revision: int) -> None:
        """Apply the store's changes as they come; if the watch ends, drop the state so it is reloaded.

        A state that silently stopped following would be scheduled from forever, so any end of the
        watch other than stepping down (history compacted, the store closed or failing) drops it, and
        the loop loads a fresh snapshot on its next turn.
        """
        try:
            follow = self.store.watch(keys.FOLLOWED_FROM, start_revision=revision, end=keys.FOLLOWED_TO, previous=False)
            async for event in follow:
                if self.state is None:
                    return
                self._apply_event(self.state, event)
                self.applied_revision = event.revision
                if self._syncs:
                    self._release_syncs()
            log.warning("watch ended; reloading")
        except CompactedError:
            log.warning("watch history compacted; reloading")
        except StoreError as exc:
            log.warning("watch failed; reloading", error=str(exc))
        self.state = None
        self._wake.set()

    async def sync(self) -> None:
        """Return once every write made before this call has reached the in-memory state.

        Raises ``NotFollowing`` if this replica holds no state (not loaded yet, or closed), or is
        closed before the write arrives; ``StoreUnavailable`` if the watch ends or stays silent for
        ``SYNC_WITHIN`` first (the state is then dropped: the next ``follow`` loads it again).
        """
        if self.state is None or self._watch is None:
            raise NotFollowing("this scheduler holds no state to sync: call follow() first")
        revision = await self._mark()
        if self.applied_revision >= revision:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._syncs.append((revision, waiter))
        watch = self._watch
        await asyncio.wait([waiter, watch], timeout=SYNC_WITHIN, return_when=asyncio.FIRST_COMPLETED)
        if waiter.done():
            waiter.result()  # NotFollowing, if closed meanwhile
            return
        waiter.cancel()
        ended = watch.done()
        await self._stop_following()
        why = "ended" if ended else f"delivered nothing for {SYNC_WITHIN:g} s"
        raise StoreUnavailable(f"the store's watch {why} before this replica's write came through: loading again")

    async def _stop_following(self) -> None:
        """End the watch and drop the state it fed (the next ``follow`` loads it again)."""
        watch, self._watch = self._watch, None
        self.state = None
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watch

    def _release_syncs(self) -> None:
        waiting = []
        for revision, waiter in self._syncs:
            if revision <= self.applied_revision:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((revision, waiter))
        self._syncs = waiting

    def _apply_event(self, state: FederationState, event: WatchEvent) -> None:
        if event.type == "put" and event.kv is not None:
            self._apply_kv(state, event.kv)
            if self.leading and event.key.startswith((keys.JOBS, keys.REPORTS)):
                self._wake.set()
            return
        key = event.key
        if key == keys.LEADER:
            self._wake.set()  # the leader resigned or its lease ran out: stand-bys try to take over at once
        elif key.startswith(keys.JOBS):
            state.remove_job(key.removeprefix(keys.JOBS))
        elif key.startswith(keys.CLUSTERS):
            state.remove_cluster(key.removeprefix(keys.CLUSTERS))
        elif key == keys.QUEUES:
            state.set_queues(None)

    def _apply_kv(self, state: FederationState, kv: KeyValue) -> None:
        """Apply one stored value; one that does not parse is logged and skipped, not fatal.

        Every writer validates what it stores, so a bad value means an outside write or version
        skew; following the rest of the store matters more than that one key, which stays as it is.
        """
        try:
            self._apply_value(state, kv)
        except ValueError as exc:  # pydantic's ValidationError is one
            log.error("skipping a stored value the scheduler cannot read", key=kv.key, error=str(exc))

    def _apply_value(self, state: FederationState, kv: KeyValue) -> None:
        key = kv.key
        if key.startswith(keys.JOBS):
            job_id = key.removeprefix(keys.JOBS)
            known = state.entries.get(job_id)
            if known is not None and known.revision >= kv.mod_revision:
                return  # our own commit, applied when it landed: no need to parse it again
            ours = self.committer.written(job_id, kv.value) if self.committer is not None else None
            record = ours if ours is not None else JobRecord.from_bytes(kv.value)
            state.upsert_job(record, kv.mod_revision, kv.value)
            if self.leading:
                self.feed.observe(record, kv.mod_revision)
        elif key.startswith(keys.CLUSTERS):
            cluster = ClusterRecord.model_validate_json(kv.value)
            state.set_cluster(cluster.name, cluster.labels, cluster.cordoned)
        elif key.startswith(keys.REPORTS):
            state.set_latest(key.removeprefix(keys.REPORTS), LatestReport.from_bytes(kv.value))
        elif key.startswith(keys.HEARD):
            state.set_heard(key.removeprefix(keys.HEARD), float(kv.value))
        elif key == keys.QUEUES:
            tree = QueueTree(QueueTreeConfig.model_validate_json(kv.value))
            state.set_queues(tree)
            self.accountant.set_queue_half_lives(queue_half_lives(tree))

    async def _take_over(self) -> None:
        """Lead from the warm state: the accounting the last leader saved, brought up to the jobs.

        The job changes after the save are counted in order from the store's history, as the last
        leader counted them live; if that history is compacted, from the jobs' records instead. The
        reads come first; the counting after them has no await, so no job change applied by the
        watch can fall between the saved accounting and counting live."""
        assert self.state is not None
        await self.sync()  # the state holds every write the last leader made before its lease ran out
        await self.accountant.load(self.store)
        if not await self.feed.replay(self.accountant.saved_revision, lambda: self.applied_revision):
            await self.feed.catch_up(self.state, self.accountant.running(), self.accountant.saved_revision)
            self.feed.counted_to = self.applied_revision
        self.leading = True
        log.info("took over as leader", jobs=len(self.state.entries), pending=len(self.state.pending))

    def stand_by(self) -> None:
        """Not the leader (any more): keep following, stop counting usage (the leader saves it)."""
        if self.leading:
            log.warning("no longer the leader; standing by")
        self.leading = False
        self.metrics.leader.set(0)

    def _fence(self) -> Any:
        return self.election.fence()

    async def _mark(self) -> int:
        """A write in the followed range: its revision bounds a read of the store's history."""
        return await self.store.put(keys.SYNC, self.election.identity.encode())

    # ---- the loop ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._wake.clear()  # what happens during the cycle wakes the next one
            await self.turn_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wait(stop), timeout=self.config.cycle_period)
            await asyncio.sleep(DEBOUNCE)  # let a burst of submits or reports land in one cycle
        await self.close()

    async def turn_once(self) -> None:
        """One turn of the loop (``step``), its outcome noted in ``health`` and the metrics. Any failure
        is survived, a store's or a fault's, so one bad turn never ends the loop; one that keeps
        failing says so (``LoopHealth``)."""
        try:
            await self.step()
        except StoreError as exc:
            log.warning("store error in scheduler loop", error=str(exc))
            await self._failed(str(exc))
        except Exception as exc:
            log.exception("fault in scheduler loop")
            await self._failed(f"{type(exc).__name__}: {exc}")
        else:
            ended = self.health.succeeded(self.clock.now())
            if ended:
                log.info("scheduler loop recovered", failed_turns=ended)
        self.metrics.observe_turn(self.health)

    async def _failed(self, error: str) -> None:
        """Note a failed turn; when it makes the loop failing, tell (an error log line, and a leader
        publishes it in its status for ``fedq explain``, which a store refusing only large writes takes)."""
        self.metrics.failed_turns.inc()
        if not self.health.failed(error, self.clock.now()):
            return
        view = self.health.view()
        log.error("scheduler loop failing", failures=view["failures"], since=view["since"], error=error)
        if self.leading:
            with contextlib.suppress(StoreError):
                await self.store.put(keys.STATUS, failing_body(self._status, view))
            self._published = b""  # the next good cycle writes its status, without the failure

    async def step(self) -> CyclePlan | None:
        """One turn: follow the store, and if this replica leads, one cycle (its plan is returned)."""
        await self.follow()
        if not await self.lead():
            return None
        try:
            return await self.cycle()
        except Deposed:
            log.warning("deposed while committing")
            self.stand_by()
            return None

    async def lead(self) -> bool:
        """Take or keep the lease; True when this replica leads (taking over if it just won)."""
        if not await self.election.try_acquire():
            self.stand_by()
            return False
        if not self.leading:
            await self._take_over()
        self.metrics.leader.set(1)
        return True

    async def _wait(self, stop: asyncio.Event) -> None:
        waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(self._wake.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def close(self) -> None:
        """Stop following and hand the lease over at once."""
        self.leading = False
        self.metrics.leader.set(0)
        await self._stop_following()
        await self.upkeep.defrag.close()
        for _revision, waiter in self._syncs:
            if not waiter.done():
                waiter.set_exception(NotFollowing("this scheduler was closed before the write arrived"))
        self._syncs = []
        await self.election.resign()

    async def cycle(self) -> CyclePlan:
        assert self.state is not None and self.port is not None and self.leading
        started = perf_counter()
        now = self.clock.now()
        turn = await self.turn.run(self.state, self.port, now)
        plan = turn.plan
        assert plan is not None  # the service's turn always plans
        for name, lost in turn.lost.items():
            self.metrics.requeued.labels(cluster=name).inc(len(lost))
            log.warning("requeued jobs of a lost cluster", cluster=name, jobs=len(lost))
        for cluster, record in turn.not_admitted:
            self.metrics.not_admitted.labels(cluster=cluster).inc()
            log.warning("requeued a job its cluster did not admit", job_id=record.id, cluster=cluster)
        if turn.unmet:
            cancelled = self.config.jobs.kill_invalid_depend
            log.info("jobs whose dependency can never be met", jobs=len(turn.unmet), cancelled=cancelled)
        if len(plan.dispatches) >= self.config.dispatch_per_cycle:
            self._wake.set()  # a deep backlog: the next cycle starts at once
        published = status_of(plan, self.state)
        if published.compared != self._published:
            body = published.body(now)
            await self.store.put(keys.STATUS, body)
            self._published, self._status = published.compared, body
        if now - self._saved_at >= self.save_every:
            await self.accountant.save(self.store, self.applied_revision)
            self._saved_at = now
        removed, compacted = await self.upkeep.run(self.state)
        seconds = perf_counter() - started
        self.metrics.observe_cycle(plan, self.state, now, seconds, turn.dispatched, turn.evicted, removed, compacted)
        return plan
