"""predicates: node constraints (selector labels, task larger than any node, cordon, one task per
node for a job placed ``spread``).

Resource fit is the framework's own check (so no plugin can over-allocate a node); for a cluster
the size check uses its largest node shape, so a task fits a cluster only if one node can hold it.
The checks run from what never changes (labels, size) to what may (cordon), so the one that fails
says how near a node came: a cordoned node would take the task once uncordoned. Explain names the
nearest miss (``Placer.explain``).
"""

from __future__ import annotations

from policies import resources as res
from policies.framework.decisions import CORDONED, LABELS, SPREAD, TOO_BIG
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.resources import Resources
from policies.snapshot import JobInfo, NodeInfo, TaskInfo


@register_plugin
class Predicates(Plugin):
    name = "predicates"
    largest: dict[str, Resources]

    def hooks(self) -> dict[str, Fn]:
        return {"predicate": self.predicate}

    def on_session_open(self, ssn: Session) -> None:
        self.largest = {}  # per node, when first asked: a cycle judges few nodes afresh

    def predicate(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> str | None:
        labels = node.labels
        for key, value in job.cluster_selector.items():
            if labels.get(key) != value:
                return LABELS
        largest = self.largest.get(node.name)
        if largest is None:
            largest = self.largest[node.name] = node.largest_node()
        if not res.fits(task.resources, largest):
            return TOO_BIG
        if node.unschedulable:
            return CORDONED
        # A cluster (shapes) cannot tell its nodes apart: there ``packs`` counts a node per task.
        if job.spread and node.shapes is None and any(t.node == node.name for t in job.tasks):
            return SPREAD
        return None
