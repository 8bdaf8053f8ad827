"""Node scoring: ``nodeorder`` (least/most requested, balanced), ``binpack`` and ``spread``.

Scores are 0..100 per plugin times its ``weight``. They read only the task's resources and the
node's state, which is what lets the placer cache them per task shape. For a cluster the node's
figures are the cluster's totals: binpack then prefers the fullest cluster, spread the emptiest.
"""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin
from policies.resources import EPS, Resources
from policies.snapshot import JobInfo, NodeInfo, TaskInfo

MAX_SCORE = 100.0


def requested_fraction(node: NodeInfo, task: Resources, name: str) -> float:
    """Fraction of ``name`` in use on the node once the task is added."""
    alloc = node.allocatable.get(name, 0.0)
    if alloc <= EPS:
        return 0.0
    return min(1.0, (node.used.get(name, 0.0) + task.get(name, 0.0)) / alloc)


@register_plugin
class NodeOrder(Plugin):
    """kube-scheduler's classic scores over cpu and memory."""

    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least = arguments.number("leastrequested.weight", 1.0)
        self.most = arguments.number("mostrequested.weight", 0.0)
        self.balanced = arguments.number("balancedresource.weight", 1.0)

    def hooks(self) -> dict[str, Fn]:
        return {"node_order": self.score}

    def score(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
        cpu = requested_fraction(node, task.resources, "cpu")
        mem = requested_fraction(node, task.resources, "memory")
        used = (cpu + mem) / 2.0
        return MAX_SCORE * (self.least * (1.0 - used) + self.most * used + self.balanced * (1.0 - abs(cpu - mem)))


@register_plugin
class Binpack(Plugin):
    """Volcano's binpack: prefer the node that the task leaves fullest, per weighted resource."""

    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.number("binpack.weight", 1.0)
        self.weights = {"cpu": arguments.number("binpack.cpu", 1.0), "memory": arguments.number("binpack.memory", 1.0)}
        for name, w in (arguments.get("binpack.resources") or {}).items():
            self.weights[str(name)] = float(w)

    def hooks(self) -> dict[str, Fn]:
        return {"node_order": self.score}

    def score(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
        total = 0.0
        wsum = 0.0
        for name, w in self.weights.items():
            if task.resources.get(name, 0.0) > 0:
                total += w * requested_fraction(node, task.resources, name)
                wsum += w
        return self.weight * MAX_SCORE * total / wsum if wsum else 0.0


@register_plugin
class Spread(Plugin):
    """Prefer the least-loaded node (or cluster): the opposite of binpack."""

    name = "spread"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.number("weight", 1.0)

    def hooks(self) -> dict[str, Fn]:
        return {"node_order": self.score}

    def score(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
        names = [r for r in task.resources if task.resources[r] > 0] or ["cpu"]
        used = sum(requested_fraction(node, task.resources, r) for r in names) / len(names)
        return self.weight * MAX_SCORE * (1.0 - used)
