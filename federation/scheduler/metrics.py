"""What the scheduler tells Prometheus: who leads, how long cycles take, what they start and stop,
how deep the queue is and how fresh each cluster's report is (on the API server's ``/metrics``)."""

from __future__ import annotations

from collections import Counter as Tally
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from federation.models import JobRecord
    from federation.scheduler.cycle import CyclePlan
    from federation.scheduler.health import LoopHealth
    from federation.scheduler.state import FederationState

CYCLE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.leader = Gauge("fedq_scheduler_leader", "1 while this replica leads (schedules), else 0", registry=r)
        self.cycle_seconds = Histogram(
            "fedq_scheduler_cycle_seconds", "A leader cycle: plan, commit, publish", buckets=CYCLE_BUCKETS, registry=r
        )
        self.plan_seconds = Histogram(
            "fedq_scheduler_plan_seconds",
            "Planning within a cycle (the policy session)",
            buckets=CYCLE_BUCKETS,
            registry=r,
        )
        self.dispatched = Counter("fedq_scheduler_dispatched", "Jobs dispatched to a cluster", ["cluster"], registry=r)
        self.evicted = Counter(
            "fedq_scheduler_evictions", "Running jobs asked to stop and requeue (reclaim)", ["cluster"], registry=r
        )
        self.requeued = Counter(
            "fedq_scheduler_lost_requeues", "Jobs requeued because their cluster went silent", ["cluster"], registry=r
        )
        self.not_admitted = Counter(
            "fedq_scheduler_admission_requeues",
            "Jobs requeued because their cluster did not admit them within cluster.admitWithin",
            ["cluster"],
            registry=r,
        )
        self.pending = Gauge("fedq_scheduler_pending_jobs", "Jobs waiting in the global queue", registry=r)
        self.reservations = Gauge("fedq_scheduler_reservations", "Jobs holding a reservation", registry=r)
        self.unschedulable = Gauge(
            "fedq_scheduler_unschedulable_jobs", "Jobs no joined cluster could ever hold", registry=r
        )
        self.report_age = Gauge(
            "fedq_cluster_report_age_seconds",
            "Seconds since the cluster's last capacity report",
            ["cluster"],
            registry=r,
        )
        self.finished_removed = Counter(
            "fedq_store_finished_jobs_removed", "Finished jobs removed past store.keepFinished", registry=r
        )
        self.compactions = Counter("fedq_store_compactions", "Compactions of etcd's history", registry=r)
        self.defragmentations = Counter(
            "fedq_store_defragmentations", "etcd members defragmented (store.defragAbove)", registry=r
        )
        self.failed_turns = Counter(
            "fedq_scheduler_failed_turns",
            "Turns of the scheduler's loop that failed (store errors, faults)",
            registry=r,
        )
        self.failing_turns = Gauge(
            "fedq_scheduler_failing_turns",
            "Turns of the scheduler's loop failed in a row (0: the last one was good)",
            registry=r,
        )
        self.last_good_turn = Gauge(
            "fedq_scheduler_last_good_turn_timestamp_seconds",
            "When the scheduler's loop last got through a turn (epoch seconds; 0: never)",
            registry=r,
        )

    def observe_turn(self, health: LoopHealth) -> None:
        """The loop's health after a turn (the failed turn itself is counted where it fails)."""
        self.failing_turns.set(health.failures)
        if health.last_good is not None:
            self.last_good_turn.set(health.last_good)

    def observe_cycle(
        self,
        plan: CyclePlan,
        state: FederationState,
        now: float,
        seconds: float,
        dispatched: list[JobRecord],
        evicted: list[JobRecord],
        removed: int,
        compacted: bool,
    ) -> None:
        """One leader cycle: its times, what it started and stopped, the queue and the reports' ages."""
        self.cycle_seconds.observe(seconds)
        self.plan_seconds.observe(plan.seconds)
        for cluster, count in Tally(record.cluster for record in dispatched).items():
            self.dispatched.labels(cluster=cluster).inc(count)
        for cluster, count in Tally(record.cluster for record in evicted).items():
            self.evicted.labels(cluster=cluster).inc(count)
        self.pending.set(len(state.pending))
        self.reservations.set(len(plan.reservations))
        self.unschedulable.set(len(plan.unschedulable))
        self.report_age.clear()  # clusters that left take their series with them
        for view in state.clusters.values():
            if view.report_time is not None:
                self.report_age.labels(cluster=view.name).set(now - view.report_time)
        self.finished_removed.inc(removed)
        if compacted:
            self.compactions.inc()
