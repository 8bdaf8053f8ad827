"""Node scoring: ``nodeorder`` (least/most requested, balanced), ``binpack`` and ``spread``.

Scores are 0..100 per plugin times its ``weight``. They read only the task's resources and the
node's state, which is what lets the placer cache them per task shape. For a cluster the node's
figures are the cluster's totals: binpack then prefers the fullest cluster, spread the emptiest.
"""

from __future__ import annotations

from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
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

    def on_session_open(self, ssn: Session) -> None:
        least = self.arguments.number("leastrequested.weight", 1.0)
        most = self.arguments.number("mostrequested.weight", 0.0)
        balanced = self.arguments.number("balancedresource.weight", 1.0)

        def score(task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
            cpu = requested_fraction(node, task.resources, "cpu")
            mem = requested_fraction(node, task.resources, "memory")
            used = (cpu + mem) / 2.0
            return MAX_SCORE * (least * (1.0 - used) + most * used + balanced * (1.0 - abs(cpu - mem)))

        ssn.add_hook("node_order", self.name, score)


@register_plugin
class Binpack(Plugin):
    """Volcano's binpack: prefer the node that the task leaves fullest, per weighted resource."""

    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arguments.number("binpack.weight", 1.0)
        weights = {
            "cpu": self.arguments.number("binpack.cpu", 1.0),
            "memory": self.arguments.number("binpack.memory", 1.0),
        }
        for name, w in (self.arguments.get("binpack.resources") or {}).items():
            weights[str(name)] = float(w)

        def score(task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
            total = 0.0
            wsum = 0.0
            for name, w in weights.items():
                if task.resources.get(name, 0.0) > 0:
                    total += w * requested_fraction(node, task.resources, name)
                    wsum += w
            return weight * MAX_SCORE * total / wsum if wsum else 0.0

        ssn.add_hook("node_order", self.name, score)


@register_plugin
class Spread(Plugin):
    """Prefer the least-loaded node (or cluster): the opposite of binpack."""

    name = "spread"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arguments.number("weight", 1.0)

        def score(task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
            names = [r for r in task.resources if task.resources[r] > 0] or ["cpu"]
            used = sum(requested_fraction(node, task.resources, r) for r in names) / len(names)
            return weight * MAX_SCORE * (1.0 - used)

        ssn.add_hook("node_order", self.name, score)
