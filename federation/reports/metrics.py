"""Prometheus metrics per tenant and queue, from the same numbers as the quota report.

A collector serves the families computed at the last ``update``: scrapes are synchronous and the
store is not, so the API refreshes it (asynchronously) just before each scrape. Built fresh each
time, the families carry no stale label sets for tenants or queues that went away.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from federation.accounting import AccountingSnapshot
from federation.reports.models import QuotaReport


class QuotaCollector(Collector):
    def __init__(self) -> None:
        self._families: list[Metric] = []

    def collect(self) -> Iterator[Metric]:
        yield from self._families

    def update(self, snapshot: AccountingSnapshot, report: QuotaReport) -> None:
        allocated = GaugeMetricFamily(
            "fedq_tenant_allocated", "Resources a tenant holds now", labels=["tenant", "resource"]
        )
        usage = CounterMetricFamily(
            "fedq_tenant_usage_resource_seconds",
            "Resource-seconds a tenant has used since accounting began",
            labels=["tenant", "resource"],
        )
        rup = GaugeMetricFamily("fedq_tenant_rup", "Real user priority (decayed usage, HTCondor)", labels=["tenant"])
        eup = GaugeMetricFamily("fedq_tenant_eup", "Effective user priority: RUP x priority factor", labels=["tenant"])
        share = GaugeMetricFamily(
            "fedq_tenant_share", "Fraction of the federation's allocation the tenant holds", labels=["tenant"]
        )
        fair = GaugeMetricFamily(
            "fedq_tenant_fair_share", "Fraction of the fair-share targets that is the tenant's", labels=["tenant"]
        )
        pending = GaugeMetricFamily("fedq_tenant_pending", "Jobs waiting in the global queue", labels=["tenant"])
        for row in report.tenants:
            t = row.tenant
            for resource, amount in row.allocated.items():
                allocated.add_metric([t, resource], amount)
            meter = snapshot.tenants.get(t)
            for resource, seconds in ({} if meter is None else meter.seconds).items():
                usage.add_metric([t, resource], seconds)
            rup.add_metric([t], row.real_priority)
            eup.add_metric([t], row.effective_priority)
            share.add_metric([t], row.share_now)
            fair.add_metric([t], row.fair_share)
            pending.add_metric([t], row.pending)
        queue_allocated = GaugeMetricFamily(
            "fedq_queue_allocated", "Resources a queue's subtree holds now", labels=["queue", "resource"]
        )
        queue_pending = GaugeMetricFamily("fedq_queue_pending", "Jobs waiting in a queue's subtree", labels=["queue"])
        queue_rup = GaugeMetricFamily("fedq_queue_rup", "Real priority of a queue's subtree", labels=["queue"])
        for q in report.queues:
            for resource, amount in q.allocated.items():
                queue_allocated.add_metric([q.queue, resource], amount)
            queue_pending.add_metric([q.queue], q.pending)
            queue_rup.add_metric([q.queue], q.real_priority)
        self._families = [allocated, usage, rup, eup, share, fair, pending, queue_allocated, queue_pending, queue_rup]
