"""Each tenant's fair share of a scenario, from queue weights: the target that Jain's index and the
share plot compare usage against.

Only queues with jobs in the scenario compete, as only they ask for capacity: a queue's share is
its weight over its active siblings' weights, times its parent's share, and a leaf's share is split
equally among the tenants that submitted to it. Guarantees and caps are limits, not targets, and
time-decayed usage is how the scheduler pursues this target, so neither changes it.
"""

from __future__ import annotations

from collections.abc import Iterable

from federation.models import QueueTree


def fair_shares(tree: QueueTree, submissions: Iterable[tuple[str, str]]) -> dict[str, float]:
    """``submissions``: (tenant, leaf queue) of accepted jobs. Shares sum to 1 over those tenants."""
    tenants_of: dict[str, set[str]] = {}
    for tenant, queue in submissions:
        node = tree.get(queue)
        if node is not None:
            tenants_of.setdefault(node.path, set()).add(tenant)
    active: set[str] = set()
    for leaf in tenants_of:
        node = tree.get(leaf)
        while node is not None:
            active.add(node.path)
            node = node.parent
    shares: dict[str, float] = {}
    for leaf, tenants in sorted(tenants_of.items()):
        share = 1.0
        node = tree.get(leaf)
        while node is not None:
            siblings = (
                node.parent.children if node.parent is not None else [tree.nodes[q.name] for q in tree.config.queues]
            )
            share *= node.config.weight / sum(s.config.weight for s in siblings if s.path in active)
            node = node.parent
        for tenant in sorted(tenants):
            shares[tenant] = shares.get(tenant, 0.0) + share / len(tenants)
    return shares
