"""One scheduling turn: everything the leader does in a cycle, for ``SchedulerService`` and ``fedq simulate``.

In order: the jobs of clusters silent past ``cluster.requeueAfter`` go back to the queue, then those a
cluster took but did not admit within ``cluster.admitWithin``; queued jobs whose dependency can never
be met are Cancelled (or say so); then the global cycle plans (``GlobalScheduler.plan`` on the
accountant's usage, reclaim and preemption each held to what is left of its eviction budget) and the plan becomes
lifecycle events: dispatches, marks, evictions. A new kind of eviction is one more event list in
``run`` and is counted in the same window. Each step lands its events through the ``Port`` before the
next reads the state, since what it changed is what the next must see.

Async, with a port that may never suspend: production's port commits to etcd and awaits it, the
simulator's applies the events to its records and members at once, so there a turn completes on its
coroutine's first step (``run_sync``), without an event loop, for the price of a coroutine object
(microseconds against a plan's milliseconds). A sync core that handed back events for its caller to
commit would have left each caller to sequence the steps again, which is what this module ends.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from federation.accounting import Accountant
from federation.config import FederationConfig
from federation.lifecycle import ClusterLost, DependencyUnmet, Dispatch, Event, NotAdmitted, Reclaim
from federation.models import JobRecord
from federation.scheduler.conf import global_conf
from federation.scheduler.cycle import CyclePlan, GlobalScheduler
from federation.scheduler.marks import marks
from federation.scheduler.state import FederationState
from policies import SchedulerConf
from policies.clock import Clock

EVICTION_WINDOW = 60.0  # seconds over which reclaim's and preemption's maxPerMinute count evictions

T = TypeVar("T")


class Port(Protocol):
    """Where a turn's lifecycle events land: the store in production, the simulator's records."""

    async def commit(self, events: Sequence[tuple[str, Event]], now: float) -> list[JobRecord]:
        """Carry out each (job, event) that still applies to its job, the state told of each; returns
        the records that landed."""
        ...


@dataclass
class TurnResult:
    """What a turn did, for its caller's metrics, logs and (in the simulator) wake-ups."""

    plan: CyclePlan | None = None  # None: it did not plan (see ``Turn.skip_idle``)
    idle: bool = False  # it would have planned, but nothing could act
    lost: dict[str, list[JobRecord]] = field(default_factory=dict)  # cluster -> its jobs written off
    not_admitted: list[tuple[str, JobRecord]] = field(default_factory=list)  # (cluster, job)
    unmet: list[JobRecord] = field(default_factory=list)
    dispatched: list[JobRecord] = field(default_factory=list)
    evicted: list[JobRecord] = field(default_factory=list)


class Turn:
    """The leader's turn over a state and a port. ``skip_idle``: plan only after a change the last plan
    did not make, and only when a plan could act (``FederationState.may_act``): the simulator plans at
    every event, where a plan that can only repeat the last one's marks is most of its time."""

    def __init__(
        self, config: FederationConfig, clock: Clock, accountant: Accountant, *, skip_idle: bool = False
    ) -> None:
        self.config = config
        self.accountant = accountant
        self.scheduler = GlobalScheduler(config, clock)
        self.skip_idle = skip_idle
        # When each eviction of the window landed, per budget: reclaim's and priority preemption's.
        self._evictions: dict[str, deque[float]] = {"reclaim": deque(), "preempt": deque()}

    async def run(self, state: FederationState, port: Port, now: float, *, changed: bool = True) -> TurnResult:
        """One turn at ``now``; ``changed``: the state changed since the last plan other than by it."""
        done = TurnResult()
        cluster = self.config.cluster
        for name in state.lost_clusters(now, cluster.requeue_after):
            written_off = [(job_id, ClusterLost(name)) for job_id in list(state.clusters[name].jobs)]
            lost = await self._land(port, written_off, now)
            if lost:
                done.lost[name] = lost
        late = state.not_admitted(now, cluster.admit_within)
        if late:
            took = dict(late)
            events: list[tuple[str, Event]] = [(job_id, NotAdmitted(c, cluster.admit_within)) for job_id, c in late]
            done.not_admitted = [(took[record.id], record) for record in await self._land(port, events, now)]
        cancel = self.config.jobs.kill_invalid_depend
        unmet = [(job_id, DependencyUnmet(why, cancel)) for job_id, why in state.dependencies.take_unmet()]
        done.unmet = await self._land(port, unmet, now)
        if self.skip_idle:
            if not (changed or done.lost or done.not_admitted or done.unmet):
                return done
            state.release(now)  # jobs whose retry time has come are pending again
            if not len(state.pending):
                return done
            if not state.may_act(now, cluster.lost_after):
                done.idle = True
                return done
        plan = done.plan = self.plan(state, now)
        dispatches: list[tuple[str, Event]] = [(job_id, Dispatch(to)) for job_id, to in plan.dispatches]
        evictions: list[tuple[str, Event]] = [(job_id, Reclaim(why)) for job_id, _, why in plan.evictions]
        landed = await self._land(port, [*dispatches, *marks(plan, state), *evictions], now)
        sent, evicted = {job_id for job_id, _ in dispatches}, {job_id for job_id, _ in evictions}
        done.dispatched = [record for record in landed if record.id in sent]
        done.evicted = [record for record in landed if record.id in evicted]
        for record in done.evicted:
            self._evictions["preempt" if record.id in plan.preempted else "reclaim"].append(now)
        return done

    def plan(self, state: FederationState, now: float) -> CyclePlan:
        """The global cycle's plan now, on the accountant's usage and what is left of the eviction budget."""
        return self.scheduler.plan(state, self.accountant.usage(now), self._conf(now))

    def _conf(self, now: float) -> SchedulerConf | None:
        """Reclaim and preemption may each evict only what is left of this window's allowance (None:
        all of it, the scheduler's own conf)."""
        for window in self._evictions.values():
            while window and now - window[0] > EVICTION_WINDOW:
                window.popleft()
        reclaimed, preempted = len(self._evictions["reclaim"]), len(self._evictions["preempt"])
        if not reclaimed and not preempted:
            return None
        return global_conf(
            self.config,
            reclaim_budget=max(0, self.config.reclaim.max_per_minute - reclaimed),
            preempt_budget=max(0, self.config.preemption.max_per_minute - preempted),
        )

    @staticmethod
    async def _land(port: Port, events: Sequence[tuple[str, Event]], now: float) -> list[JobRecord]:
        return await port.commit(events, now) if events else []


def run_sync(turn: Coroutine[Any, Any, T]) -> T:
    """Run a turn whose port never suspends (the simulator's) to its end, without an event loop."""
    try:
        turn.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    turn.close()
    raise RuntimeError("a turn's port suspended: run it in an event loop")
