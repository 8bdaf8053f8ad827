"""binpack: Volcano's bin packing, so whole nodes (or clusters) stay free for big jobs."""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin
from policies.plugins.scoring import MAX_SCORE, requested_fraction
from policies.snapshot import JobInfo, NodeInfo, TaskInfo


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
