"""``build_quota_report``: per tenant (and queue) quota, allocation, shares, usage and waits.

Pure: it reads an accounting snapshot, the queue tree, the jobs' facts and the federation's capacity,
and computes every number of the report at ``snapshot.time``. Definitions are in docs/reports.md.
Shares are always of the whole federation; ``tenant`` only removes other tenants' rows, ``queue``
limits each row to the usage and jobs in that subtree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from federation.accounting.history import Amounts
from federation.accounting.past import past_priorities
from federation.accounting.snapshot import AccountingSnapshot, SeriesKey
from federation.models import JobState, QueueTree
from federation.reports.facts import JobFacts, JobsRead
from federation.reports.models import Amount, ClusterRow, QueueRow, QuotaReport, TenantRow, UsageSeries
from federation.reports.targets import Priorities, borrowed_and_lent, entitlements
from federation.simulator.metrics import percentile
from policies import resources as res
from policies.format import format_time
from policies.shares import effective_priority

HOUR = 3600.0
ON_A_CLUSTER = frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING})


class UnknownQueue(KeyError):
    pass


@dataclass
class _Usage:
    """What one tenant (or one tenant on one cluster) holds and used, and its jobs."""

    allocated: Amount = field(default_factory=dict)
    units: float = 0.0
    seconds: Amount = field(default_factory=dict)
    unit_seconds: float = 0.0
    running: int = 0
    pending: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    waits: list[float] = field(default_factory=list)


def build_quota_report(
    snapshot: AccountingSnapshot,
    tree: QueueTree,
    jobs: JobsRead,
    capacity: Mapping[str, float],
    *,
    since: float,
    until: float,
    tenant: str | None = None,
    queue: str | None = None,
    by_cluster: bool = False,
    bins: int = 0,
) -> QuotaReport:
    """The report at ``snapshot.time`` over the window ``[since, until]``; ``bins`` > 0 adds a usage series."""
    if until < since:
        raise ValueError(f"the window ends ({format_time(until)}) before it starts ({format_time(since)})")
    in_scope = _scope(tree, queue)
    weights = snapshot.weights
    known = known_tenants(tree, snapshot, jobs) | ({tenant} if tenant is not None else set())

    leaves: dict[str, set[str]] = {}
    for node in tree.leaves():
        for t in node.config.tenants:
            leaves.setdefault(t, set()).add(node.path)
    for t, q, _ in snapshot.series:
        leaves.setdefault(t, set()).add(q)
    for job in jobs.facts:
        leaves.setdefault(job.tenant, set()).add(job.queue)
    for t, q in jobs.queued:
        leaves.setdefault(t, set()).add(q)
    scoped = {t: {q for q in qs if in_scope(q)} for t, qs in leaves.items()}
    lanes = [(q, t) for t, qs in leaves.items() for q in qs]
    capacity_units = res.units(capacity, weights)
    slices, targets = entitlements(tree, snapshot, capacity_units, lanes)
    window = snapshot.window(since, until)

    per_tenant: dict[str, _Usage] = {t: _Usage() for t in known if queue is None or scoped.get(t)}
    per_cluster: dict[tuple[str, str], _Usage] = {}
    for key, meter in snapshot.series.items():
        t, q, c = key
        if t in per_tenant and in_scope(q):
            for usage in (per_tenant[t], per_cluster.setdefault((t, c), _Usage())):
                _add_series(usage, meter.rates, meter.units, window[key].seconds, window[key].unit_seconds)
    for job in jobs.facts:
        if job.tenant in per_tenant and in_scope(job.queue):
            targets_of = [per_tenant[job.tenant]]
            if job.cluster:
                targets_of.append(per_cluster.setdefault((job.tenant, job.cluster), _Usage()))
            for usage in targets_of:
                _count_job(usage, job, since, until)
    for (t, q), queued in jobs.queued.items():
        if t in per_tenant and in_scope(q):
            per_tenant[t].pending += queued

    allocated_total = sum(m.units for m in snapshot.series.values())
    window_total = sum(a.unit_seconds for a in window.values())
    target_units = _tenant_targets(targets, scoped)

    def past_targets(then: Priorities) -> tuple[dict[str, float], float]:
        """Each tenant's target (units) as it was when ``then``'s priorities held, and all targets' sum."""
        _, past = entitlements(tree, then, capacity_units, lanes)
        return _tenant_targets(past, scoped), sum(past.values())

    target_total = sum(targets.values())
    guarantees = {t: _tenant_guarantee(tree, scoped.get(t, set()), leaves) for t in per_tenant}
    borrowed, lent = borrowed_and_lent({t: u.allocated for t, u in per_tenant.items()}, guarantees)
    rows = []
    for t in sorted(per_tenant):
        usage = per_tenant[t]
        tenant_meter = snapshot.tenants.get(t)
        rows.append(
            TenantRow(
                tenant=t,
                queues=sorted(scoped.get(t, ())),
                guarantee=guarantees[t],
                cap=_tenant_cap(tree, scoped.get(t, set())),
                allocated=usage.allocated,
                allocated_units=usage.units,
                share_now=_ratio(usage.units, allocated_total),
                share_window=_ratio(usage.unit_seconds, window_total),
                fair_share=_ratio(target_units.get(t, 0.0), target_total),
                fair_share_units=target_units.get(t, 0.0),
                borrowed=borrowed[t],
                lent=lent[t],
                real_priority=snapshot.rup(t),
                effective_priority=snapshot.eup(t),
                priority_factor=snapshot.factor(t),
                resource_hours=_hours(usage.seconds),
                unit_hours=usage.unit_seconds / HOUR,
                running=usage.running,
                pending=usage.pending,
                completed=usage.completed,
                failed=usage.failed,
                cancelled=usage.cancelled,
                wait_p50=percentile(usage.waits, 50) if usage.waits else None,
                wait_p95=percentile(usage.waits, 95) if usage.waits else None,
                last_usage=None if tenant_meter is None else tenant_meter.last_usage(snapshot.time),
                clusters=[_cluster_row(c, u) for (tt, c), u in sorted(per_cluster.items()) if tt == t]
                if by_cluster
                else [],
            )
        )
    shown = set(per_tenant) if tenant is None else {tenant} & set(per_tenant)
    return QuotaReport(
        generated_at=snapshot.time,
        since=since,
        until=until,
        weights=dict(weights),
        capacity=dict(capacity),
        capacity_units=capacity_units,
        allocated_units=allocated_total,
        tenant=tenant,
        queue=queue,
        by_cluster=by_cluster,
        tenants=[row for row in rows if row.tenant in shown],
        queues=[] if tenant is not None else _queue_rows(tree, snapshot, jobs, slices, window, in_scope),
        series=None if bins <= 0 else _series(snapshot, since, until, bins, shown, in_scope, past_targets),
    )


def known_tenants(tree: QueueTree, snapshot: AccountingSnapshot, jobs: JobsRead) -> set[str]:
    """Tenants named by the queue tree, the accounting or a job: the ones a report can be asked about."""
    return tree.tenants() | snapshot.tenants.keys() | snapshot.factors.keys() | jobs.tenants()


def _scope(tree: QueueTree, queue: str | None) -> Callable[[str], bool]:
    if queue is None:
        return lambda _: True
    node = tree.get(queue)
    if node is None:
        raise UnknownQueue(queue)
    path = node.path
    return lambda q: q == path or q.startswith(path + ".")


def _add_series(usage: _Usage, rates: Amount, units: float, seconds: Amount, unit_seconds: float) -> None:
    res.iadd(usage.allocated, rates)
    usage.units += units
    res.iadd(usage.seconds, seconds)
    usage.unit_seconds += unit_seconds


def _count_job(usage: _Usage, job: JobFacts, since: float, until: float) -> None:
    if job.state in ON_A_CLUSTER:
        usage.running += 1
    elif job.end_time is not None and since <= job.end_time <= until:
        if job.state is JobState.SUCCEEDED:
            usage.completed += 1
        elif job.state is JobState.FAILED:
            usage.failed += 1
        else:
            usage.cancelled += 1
    if job.start_time is not None and since <= job.start_time <= until:
        usage.waits.append(job.start_time - job.submit_time)


def _tenant_guarantee(tree: QueueTree, scoped: set[str], leaves: Mapping[str, set[str]]) -> Amount:
    """The tenant's part of its leaves' guarantees: each split evenly among the leaf's tenants (those
    listed, or for an open leaf those that used it or have jobs there)."""
    out: Amount = {}
    for path in scoped:
        node = tree.get(path)
        if node is None or not node.is_leaf or not node.config.guarantee:
            continue
        n = len(node.config.tenants) or sum(1 for qs in leaves.values() if path in qs)
        res.iadd(out, node.config.guarantee, 1.0 / max(n, 1))
    return out


def _tenant_cap(tree: QueueTree, scoped: set[str]) -> Amount:
    """Sum over the tenant's leaves of each leaf's effective cap (the smallest along its ancestry);
    a resource that any of its leaves does not cap is left out: it is not capped for the tenant."""
    caps: list[Amount] = []
    for path in scoped:
        node = tree.get(path)
        cap: Amount = {}
        while node is not None:
            for r, amount in node.config.cap.items():
                cap[r] = min(amount, cap.get(r, amount))
            node = node.parent
        caps.append(cap)
    if not caps:
        return {}
    common = set.intersection(*(set(cap) for cap in caps))
    return {r: sum(cap[r] for cap in caps) for r in sorted(common)}


def _count_up(tree: QueueTree, queue: str, counts: dict[str, list[int]], column: int, n: int) -> None:
    """Add ``n`` to ``column`` of ``queue``'s counts and of every queue above it."""
    walk = tree.get(queue)
    while walk is not None:
        counts[walk.path][column] += n
        walk = walk.parent


def _cluster_row(cluster: str, usage: _Usage) -> ClusterRow:
    return ClusterRow(
        cluster=cluster,
        allocated=usage.allocated,
        allocated_units=usage.units,
        resource_hours=_hours(usage.seconds),
        unit_hours=usage.unit_seconds / HOUR,
        running=usage.running,
        completed=usage.completed,
        failed=usage.failed,
    )


def _queue_rows(
    tree: QueueTree,
    snapshot: AccountingSnapshot,
    jobs: JobsRead,
    slices: Mapping[str, float],
    window: Mapping[SeriesKey, Amounts],
    in_scope: Callable[[str], bool],
) -> list[QueueRow]:
    allocated = {p: dict(snapshot.queues[p].rates) if p in snapshot.queues else {} for p in tree.nodes}
    borrowed: dict[str, Amount] = {}
    lent: dict[str, Amount] = {}
    groups: dict[str | None, list[str]] = {}
    for path, node in tree.nodes.items():
        groups.setdefault(None if node.parent is None else node.parent.path, []).append(path)
    for siblings in groups.values():
        b, lt = borrowed_and_lent(
            {p: allocated[p] for p in siblings}, {p: tree.nodes[p].config.guarantee for p in siblings}
        )
        borrowed.update(b)
        lent.update(lt)
    counts: dict[str, list[int]] = {p: [0, 0] for p in tree.nodes}
    for job in jobs.facts:
        if job.state in ON_A_CLUSTER:
            _count_up(tree, job.queue, counts, 0, 1)
    for (_, q), queued in jobs.queued.items():
        _count_up(tree, q, counts, 1, queued)
    rows = []
    for path, node in sorted(tree.nodes.items()):
        if not in_scope(path):
            continue
        conf = node.config
        meter = snapshot.queues.get(path)
        seconds: Amount = {}
        for (_, q, _), amounts in window.items():
            if q == path or q.startswith(path + "."):
                res.iadd(seconds, amounts.seconds)
        rup = snapshot.queue_rup(path)
        rows.append(
            QueueRow(
                queue=path,
                guarantee=conf.guarantee,
                cap=conf.cap,
                allocated=allocated[path],
                allocated_units=0.0 if meter is None else meter.units,
                fair_share_units=slices.get(path, 0.0),
                borrowed=borrowed[path],
                lent=lent[path],
                real_priority=rup,
                effective_priority=effective_priority(rup, conf.priority_factor, conf.weight),
                resource_hours=_hours(seconds),
                running=counts[path][0],
                pending=counts[path][1],
            )
        )
    return rows


def _series(
    snapshot: AccountingSnapshot,
    since: float,
    until: float,
    bins: int,
    tenants: set[str],
    in_scope: Callable[[str], bool],
    targets_at: Callable[[Priorities], tuple[Mapping[str, float], float]],
) -> UsageSeries:
    edges = [since + (until - since) * i / bins for i in range(bins + 1)]
    per_tenant = {t: [0.0] * bins for t in sorted(tenants)}
    total = [0.0] * bins
    for (t, q, _), amounts in snapshot.binned(edges).items():
        for i, amount in enumerate(amounts):
            total[i] += amount.unit_seconds
            if t in per_tenant and in_scope(q):
                per_tenant[t][i] += amount.unit_seconds
    fair: dict[str, list[float]] = {t: [] for t in per_tenant}
    fair_units: dict[str, list[float]] = {t: [] for t in per_tenant}
    for then in past_priorities(snapshot, edges):
        targets, whole = targets_at(then)
        for t in per_tenant:
            fair_units[t].append(targets.get(t, 0.0))
            fair[t].append(_ratio(targets.get(t, 0.0), whole))
    return UsageSeries(edges=edges, tenants=per_tenant, total=total, fair_share=fair, fair_share_units=fair_units)


def _tenant_targets(targets: Mapping[tuple[str, str], float], scoped: Mapping[str, set[str]]) -> dict[str, float]:
    """Each tenant's target in units: the sum of its lanes' in the leaves in scope."""
    return {t: sum(targets.get((q, t), 0.0) for q in leaves) for t, leaves in scoped.items()}


def _hours(seconds: Amount) -> Amount:
    return {r: s / HOUR for r, s in sorted(seconds.items())}


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0
