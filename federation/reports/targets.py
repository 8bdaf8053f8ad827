"""Fair-share targets and borrowing, computed the way the scheduler's fairshare plugin divides capacity.

Queues: ``divide_tree`` over the federation's capacity in weighted units, level by level, each queue
claiming with weight 1/EUP (EUP = queue RUP x priorityFactor / weight), its guarantee as a floor,
its cap (and, without acceptSurplus, its guarantee) as a ceiling, and its demand as a ceiling too.
Within a leaf, the leaf's slice is pie-spun among the tenants with demand there in proportion to
1/EUP (EUP = tenant RUP x priority factor). Reports ask with every tenant's demand at the whole
capacity (``entitlements``): a tenant's fair share is what it would get if everyone wanted everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from federation.models import QueueTree
from federation.reports.models import Amount
from policies.resources import units
from policies.shares import Claim, divide_tree, effective_priority, pie_spin
from policies.snapshot import ROOT

UNIT = "units"


class Priorities(Protocol):
    """The fair-share inputs at one time: ``AccountingSnapshot`` (now) or ``PastPriorities`` (then)."""

    @property
    def weights(self) -> Mapping[str, float]: ...

    def rup(self, tenant: str) -> float: ...

    def queue_rup(self, queue: str) -> float: ...

    def factor(self, tenant: str) -> float: ...


def entitlements(
    tree: QueueTree, priorities: Priorities, capacity_units: float, lanes: Iterable[tuple[str, str]]
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """``fair_share_targets`` with every (leaf, tenant) lane wanting the whole capacity: slices that
    move only with usage (through the RUPs), never with whether a tenant has a job right now."""
    return fair_share_targets(tree, priorities, capacity_units, dict.fromkeys(lanes, capacity_units))


def fair_share_targets(
    tree: QueueTree,
    priorities: Priorities,
    capacity_units: float,
    demand: Mapping[tuple[str, str], float],
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """Slices in units per queue path, and per (leaf, tenant); ``demand`` is in units per (leaf, tenant)."""
    weights = priorities.weights
    requested: dict[str, float] = {}
    for (leaf, _), amount in demand.items():
        node = tree.get(leaf)
        while node is not None:
            requested[node.path] = requested.get(node.path, 0.0) + amount
            node = node.parent
    claims: dict[str, Claim] = {}
    children: dict[str, list[str]] = {ROOT: []}
    for path, node in tree.nodes.items():
        conf = node.config
        eup = effective_priority(priorities.queue_rup(path), conf.priority_factor, conf.weight)
        claims[path] = Claim(
            weight=1.0 / eup,
            guarantee={UNIT: units(conf.guarantee, weights)},
            cap={UNIT: units(conf.cap, weights)} if conf.cap else None,
            accept_surplus=conf.accept_surplus,
            request={UNIT: requested.get(path, 0.0)},
        )
        children.setdefault(ROOT if node.parent is None else node.parent.path, []).append(path)
    slices = {q: s.get(UNIT, 0.0) for q, s in divide_tree({UNIT: capacity_units}, claims, children).items()}
    by_leaf: dict[str, dict[str, float]] = {}
    for (leaf, tenant), amount in demand.items():
        if amount > 0 and leaf in tree.nodes:
            by_leaf.setdefault(leaf, {})[tenant] = amount
    tenants: dict[tuple[str, str], float] = {}
    for leaf, wants in by_leaf.items():
        eups = {t: effective_priority(priorities.rup(t), priorities.factor(t)) for t in wants}
        for tenant, got in pie_spin(slices.get(leaf, 0.0), wants, eups).items():
            tenants[(leaf, tenant)] = got
    return slices, tenants


def borrowed_and_lent(
    allocated: Mapping[str, Amount], guarantee: Mapping[str, Amount]
) -> tuple[dict[str, Amount], dict[str, Amount]]:
    """Per entity and resource: borrowed = allocation above guarantee; lent = unused guarantee, up to
    what the other entities borrow (an idle guarantee nobody else uses is not lent, just idle)."""
    borrowed = {
        k: {r: a - guarantee.get(k, {}).get(r, 0.0) for r, a in alloc.items() if a > guarantee.get(k, {}).get(r, 0.0)}
        for k, alloc in allocated.items()
    }
    total: dict[str, float] = {}
    for amounts in borrowed.values():
        for r, amount in amounts.items():
            total[r] = total.get(r, 0.0) + amount
    lent: dict[str, Amount] = {}
    for k in allocated:
        out = {}
        for r, g in guarantee.get(k, {}).items():
            idle = g - allocated[k].get(r, 0.0)
            others = total.get(r, 0.0) - borrowed[k].get(r, 0.0)
            if idle > 0 and others > 0:
                out[r] = min(idle, others)
        lent[k] = out
    return borrowed, lent
