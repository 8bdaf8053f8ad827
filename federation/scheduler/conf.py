"""The global session's conf, built from ``configs/federation.yaml`` so admins set policy in one place."""

from __future__ import annotations

from typing import Any

import yaml

from federation.config import FederationConfig
from policies import SchedulerConf, load_conf

_PLACEMENT_PLUGINS: dict[str, dict[str, Any]] = {
    "pack": {"name": "binpack", "arguments": {"binpack.weight": 10}},
    "spread": {"name": "spread"},
    "least-loaded": {"name": "nodeorder", "arguments": {"leastrequested.weight": 10, "balancedresource.weight": 0}},
}


def global_conf(
    config: FederationConfig, *, reclaim_budget: int | None = None, preempt_budget: int | None = None
) -> SchedulerConf:
    """The global session's conf, parsed and validated."""
    return load_conf(global_conf_mapping(config, reclaim_budget=reclaim_budget, preempt_budget=preempt_budget))


def global_conf_mapping(
    config: FederationConfig, *, reclaim_budget: int | None = None, preempt_budget: int | None = None
) -> dict[str, Any]:
    """allocate, backfill (and preempt, reclaim): the global cycle over member clusters.

    preempt (``preemption.enabled``) lets a job stop strictly lower-priority preemptible jobs of its
    own queue (the priority plugin's rule); it runs before reclaim, which takes back across queues.

    Only fairshare limits what a queue may take: it orders queues and tenants, slices capacity by
    decayed usage (guarantees first, caps and acceptSurplus as hard limits) and tells reclaim who
    holds more than its slice. No proportion: its weight-only deserved share would stop a newcomer at
    its weight's share however little it has used. No enqueue: its admission window (idle capacity)
    would keep a job that does not fit now out of the cycle, so the head of the queue could never
    block and reserve, and EASY/conservative backfill would not happen.
    """
    actions = ["allocate", "backfill"]
    if config.preemption.enabled:
        actions.append("preempt")
    if config.reclaim.enabled:
        actions.append("reclaim")
    budget = config.reclaim.max_per_minute if reclaim_budget is None else reclaim_budget
    preempt = config.preemption.max_per_minute if preempt_budget is None else preempt_budget
    return {
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
                    {"name": "reservation", "arguments": {"after": config.reservation.after}},
                    _PLACEMENT_PLUGINS[config.placement],
                ]
            },
        ],
        "configurations": [
            {"name": "allocate", "arguments": {"maxJobs": config.dispatch_per_cycle}},
            {"name": "backfill", "arguments": {"depth": config.reservation.depth, "enabled": config.backfill}},
            {"name": "preempt", "arguments": {"gracePeriod": config.preemption.grace, "maxEvictions": preempt}},
            {"name": "reclaim", "arguments": {"gracePeriod": config.reclaim.grace, "maxEvictions": budget}},
        ],
    }


_HEADER = """\
# The global (federation) scheduler conf that `fedq server` builds from configs/federation.yaml.
# Generated: `fedq server --config configs/federation.yaml --print-conf > configs/scheduler-global.yaml`
# (a test keeps the two equal). Set policy in federation.yaml, not here. The "nodes" of this session
# are member clusters, each summarised by node shape; placement: job puts a whole job on one cluster.
"""


def render_global_conf(config: FederationConfig) -> str:
    """The global conf as YAML in the volcano-scheduler.conf vocabulary, for people to read."""
    return _HEADER + yaml.safe_dump(global_conf_mapping(config), sort_keys=False)
