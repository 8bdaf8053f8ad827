"""What a report reads from the store, so any API replica can serve one: the accounting the
scheduler saved, the jobs' facts (``facts.py``) and the federation's capacity from the latest cluster reports."""

from __future__ import annotations

from federation.accounting import Accountant, AccountingSnapshot
from federation.clusters import ClusterService
from federation.config import FairShareConfig
from federation.models import QueueTree
from federation.models.cluster import ClusterState, summed
from federation.store import Store
from policies import resources as res
from policies.clock import Clock


def queue_half_lives(tree: QueueTree | None) -> dict[str, float]:
    """The per-queue half-life overrides of the tree, by path (what the Accountant takes)."""
    if tree is None:
        return {}
    return {path: node.config.half_life for path, node in tree.nodes.items() if node.config.half_life is not None}


async def load_accounting(
    store: Store, fairshare: FairShareConfig, clock: Clock, tree: QueueTree | None
) -> AccountingSnapshot:
    """The saved accounting, integrated from its save time to the clock's now (running jobs go on)."""
    accountant = Accountant(clock, fairshare.half_life, fairshare.usage_weights, queue_half_lives(tree))
    await accountant.load(store)
    return accountant.snapshot()


async def federation_capacity(clusters: ClusterService, lost_after: float) -> dict[str, float]:
    """Allocatable resources summed over every node of every cluster that is not unreachable."""
    total: dict[str, float] = {}
    for record, latest in await clusters.all():
        if latest is None or clusters.state_of(record, latest, lost_after) is ClusterState.UNREACHABLE:
            continue
        res.iadd(total, summed(latest.nodes))
    return total
