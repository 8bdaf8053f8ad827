"""The global session's conf, built from ``configs/federation.yaml`` so admins set policy in one place."""

from __future__ import annotations

from typing import Any

from federation.config import FederationConfig
from policies import SchedulerConf, load_conf

_PLACEMENT_PLUGINS: dict[str, dict[str, Any]] = {
    "pack": {"name": "binpack", "arguments": {"binpack.weight": 10}},
    "spread": {"name": "spread"},
    "least-loaded": {"name": "nodeorder", "arguments": {"leastrequested.weight": 10, "balancedresource.weight": 0}},
}


def global_conf(config: FederationConfig, *, reclaim_budget: int | None = None) -> SchedulerConf:
    """allocate, backfill (and reclaim): the global cycle over member clusters.

    fairshare orders queues and tenants and slices capacity; proportion is kept only for what reclaim
    needs from it (who is over its deserved share, who may be reclaimed from). No enqueue: its
    admission window (idle capacity) would keep a job that does not fit now out of the cycle, so the
    head of the queue could never block and reserve, and EASY/conservative backfill would not happen.
    """
    actions = ["allocate", "backfill"]
    if config.reclaim.enabled:
        actions.append("reclaim")
    budget = config.reclaim.max_per_minute if reclaim_budget is None else reclaim_budget
    return load_conf(
        {
            "placement": "job",
            "actions": ", ".join(actions),
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                {
                    "plugins": [
                        {
                            "name": "fairshare",
                            "arguments": {
                                "weights": config.fairshare.usage_weights,
                                "dominantShare": config.fairshare.dominant_share,
                            },
                        },
                        {"name": "predicates"},
                        {
                            "name": "proportion",
                            "enableQueueOrder": False,
                            "enableAllocatable": False,
                            "enableJobEnqueueable": False,
                        },
                        {"name": "reservation", "arguments": {"after": config.reservation.after}},
                        _PLACEMENT_PLUGINS[config.placement],
                    ]
                },
            ],
            "configurations": [
                {"name": "allocate", "arguments": {"maxJobs": config.dispatch_per_cycle}},
                {"name": "backfill", "arguments": {"depth": config.reservation.depth, "enabled": config.backfill}},
                {"name": "reclaim", "arguments": {"gracePeriod": config.reclaim.grace, "maxEvictions": budget}},
            ],
        }
    )
