"""spread: the opposite of binpack, so load stays even across nodes (or clusters)."""

from __future__ import annotations

from policies.framework.conf import Arguments
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin
from policies.plugins.scoring import MAX_SCORE, requested_fraction
from policies.snapshot import JobInfo, NodeInfo, TaskInfo


@register_plugin
class Spread(Plugin):
    """Prefer the least-loaded node (or cluster), over the resources the task asks for."""

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
