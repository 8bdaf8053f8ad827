"""nodeorder: kube-scheduler's classic node scores (least requested, most requested, balanced)."""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin
from policies.plugins.scoring import MAX_SCORE, requested_fraction
from policies.snapshot import JobInfo, NodeInfo, TaskInfo


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
