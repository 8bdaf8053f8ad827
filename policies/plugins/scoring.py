"""What the node-scoring plugins (``nodeorder``, ``binpack``, ``spread``) share: one scale and one
measure of fullness, so their weights compare.

Scores are 0..100 per plugin times its ``weight``. They read only the task's resources and the
node's state, which is what lets the placer cache them per task shape. For a cluster the node's
figures are the cluster's totals: binpack then prefers the fullest cluster, spread the emptiest.
"""

from __future__ import annotations

from policies.resources import EPS, Resources
from policies.snapshot import NodeInfo

MAX_SCORE = 100.0


def requested_fraction(node: NodeInfo, task: Resources, name: str) -> float:
    """Fraction of ``name`` in use on the node once the task is added."""
    alloc = node.allocatable.get(name, 0.0)
    if alloc <= EPS:
        return 0.0
    return min(1.0, (node.used.get(name, 0.0) + task.get(name, 0.0)) / alloc)
