"""One global cycle: a policies session over member clusters, turned into a plan to write.

Jobs go to exactly one cluster (``placement: job``): every task of a gang on one cluster, each task
on a node shape that fits it. The plan is what the dispatcher commits; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter

from federation.config import FederationConfig
from federation.scheduler.conf import global_conf
from federation.scheduler.state import FederationState
from policies import Reason, Reservation, SchedulerConf, Usage, close_session, open_session
from policies.clock import Clock


@dataclass
class CyclePlan:
    dispatches: list[tuple[str, str]] = field(default_factory=list)  # (job, cluster)
    evictions: list[tuple[str, str, str]] = field(default_factory=list)  # (job, cluster, reason)
    reservations: dict[str, Reservation] = field(default_factory=dict)
    reasons: dict[str, list[Reason]] = field(default_factory=dict)
    queue_reasons: dict[str, Reason] = field(default_factory=dict)
    tenant_reasons: dict[tuple[str, str], Reason] = field(default_factory=dict)  # (queue, tenant): passed over
    unschedulable: dict[str, str] = field(default_factory=dict)
    preempting: set[str] = field(default_factory=set)  # jobs whose room is being made by evictions
    preempted: set[str] = field(default_factory=set)  # the evicted jobs that priority preemption took
    line: list[tuple[str, str]] = field(default_factory=list)  # (job, queue): who still waits, in the order taken up
    seconds: float = 0.0
    plugin_seconds: dict[str, float] = field(default_factory=dict)


class GlobalScheduler:
    def __init__(self, config: FederationConfig, clock: Clock, conf: SchedulerConf | None = None) -> None:
        self.config = config
        self.clock = clock
        self.conf = conf if conf is not None else global_conf(config)

    def plan(self, state: FederationState, usage: Usage | None = None, conf: SchedulerConf | None = None) -> CyclePlan:
        started = perf_counter()
        snapshot = state.snapshot(self.clock.now(), self.config.cluster.lost_after, usage)
        session = open_session(conf or self.conf, snapshot, self.clock)
        session.run()
        decisions = close_session(session)
        plan = CyclePlan(
            queue_reasons=dict(decisions.queue_reasons),
            tenant_reasons=dict(decisions.tenant_reasons),
            plugin_seconds=dict(decisions.plugin_seconds),
        )
        placed: dict[str, str] = {}
        for bind in decisions.binds:
            placed.setdefault(bind.job, bind.node)
        plan.dispatches = sorted(placed.items())
        evicted: set[str] = set()
        for eviction in decisions.evictions:
            if eviction.job not in evicted:
                evicted.add(eviction.job)
                plan.evictions.append((eviction.job, eviction.node, eviction.reason))
                if eviction.action == "preempt":
                    plan.preempted.add(eviction.job)
        # A job making room by preemption waits for its victims, not for a reservation's time.
        plan.preempting = {bind.job for bind in decisions.pipelined} - set(placed)
        plan.reservations = {r.job: r for r in decisions.reservations if r.job not in plan.preempting}
        plan.reasons = {job: list(reasons) for job, reasons in decisions.reasons.items() if job not in placed}
        for job in plan.reasons:
            info = state.pending.get(job)
            why = None if info is None else state.never_fits(info)
            if why is not None:
                plan.unschedulable[job] = why.reason
        plan.line = [
            (job, queue)
            for job, queue in decisions.considered.items()
            if job not in placed and job not in plan.unschedulable
        ]
        plan.seconds = perf_counter() - started
        return plan
