"""Submit-time checks against the clusters that have joined: refuse a job none of them could ever run.

Refused, each naming its field: a resource name no joined cluster reports that is not a standard one
(with the closest known name); a job too big for every matching cluster's node shapes, or whose
``clusterSelector`` no cluster matches; a task without a command when every matching cluster's
backend needs one. "Could ever hold" is the scheduler's own rule (``FederationState.never_fits``),
asked of a state built from the clusters' records and node kinds (``ClusterShape``), so the two never disagree.
``allowUnschedulable`` skips these checks, for jobs meant for clusters that have not joined yet.

The clusters are read at most every ``JOINED_FRESH_FOR`` seconds for the jobs they accept, again after
this replica changed a cluster (a join, a new shape, a cordon), and before a refusal (as the quota
ledger does): a cluster that joined or grew a moment ago is never missed, and a hundred submits a
second do not each read and parse every cluster's shape. A cluster that shrank or left through another
replica may let a job in for that second; the scheduler then says why it waits.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from federation import capabilities
from federation.clusters import ClusterService
from federation.models import JobRecord
from federation.models.resources import ALIASES, STANDARD_RESOURCES
from federation.scheduler.job_view import job_info
from federation.scheduler.state import FederationState
from member_agent.backends import command_backends
from policies.clock import Clock
from policies.format import format_labels

ESCAPE = (
    "or submit with allowUnschedulable=true (fedq submit --allow-unschedulable) to keep it queued "
    "for a cluster that has not joined yet"
)

Fields = list[dict[str, str]]

JOINED_FRESH_FOR = 1.0
"""Seconds a read of the joined clusters serves the submits it accepts."""


@dataclass
class JoinedClusters:
    state: FederationState
    backends: dict[str, str]  # cluster -> backend
    resources: set[str]  # every name a job may ask for: the standard ones and what clusters report

    @classmethod
    async def read(cls, clusters: ClusterService) -> JoinedClusters:
        state = FederationState()
        backends: dict[str, str] = {}
        resources = {*STANDARD_RESOURCES, *ALIASES}
        for record, shape in await clusters.shapes():
            state.set_cluster(record.name, record.labels, record.cordoned)
            backends[record.name] = record.backend
            if shape is not None:
                state.set_latest(record.name, shape.as_report())
                resources.update(name for node in shape.nodes for name in node.allocatable)
        return cls(state, backends, resources)

    def refused(self, firsts: list[JobRecord], prefixes: list[str]) -> tuple[JobRecord, Fields] | None:
        """The first job (an array's first element speaks for it) no joined cluster could ever run."""
        for record, prefix in zip(firsts, prefixes, strict=True):
            fields = self.refusals(record, prefix)
            if fields:
                return record, fields
        return None

    def refusals(self, record: JobRecord, prefix: str) -> Fields:
        """What of the job no joined cluster could ever run, by field; empty when it may wait for one."""
        return (
            self._unknown_resources(record, prefix)
            or self._unhonoured(record, prefix)
            or self._misfit(record, prefix)
            or self._command(record, prefix)
        )

    def _unknown_resources(self, record: JobRecord, prefix: str) -> Fields:
        known = sorted(self.resources)
        fields = []
        for index, task in enumerate(record.spec.tasks):
            for name in task.resources:
                if name in self.resources:
                    continue
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                fields.append(
                    {
                        "field": f"{prefix}spec.tasks[{index}].resources.{name}",
                        "message": f"unknown resource {name!r}: no joined cluster has it and it is not a standard "
                        f"one; {hint}known resources: {', '.join(known)}",
                    }
                )
        return fields

    def _unhonoured(self, record: JobRecord, prefix: str) -> Fields:
        """A field (a task image, a runtimeEnv) that no cluster the job may run on honours. A cluster
        that has not reported yet could honour anything."""
        spec = record.spec
        matching = self.state.matching(spec.cluster_selector)
        if not matching or any(view.report_time is None for view in matching):
            return []
        missing = [capabilities.unhonoured(spec, view.honours) for view in matching]
        if not all(missing):
            return []
        name, path = next(iter(missing[0].items()))
        have = "; ".join(
            f"{view.name} ({self.backends[view.name]}): {', '.join(sorted(view.honours)) or 'none'}"
            for view in matching
        )
        message = (
            f"no cluster this job may run on honours {name} (what each honours: {have}): remove it, or send the "
            f"job to a cluster whose backend runs it with clusterSelector, {ESCAPE}"
        )
        return [{"field": prefix + path, "message": message}]

    def _misfit(self, record: JobRecord, prefix: str) -> Fields:
        why = self.state.never_fits(job_info(record))
        if why is None:
            return []
        spec = record.spec
        if why.part == "clusterSelector":
            labels = "; ".join(f"{view.name}: {format_labels(view.labels)}" for view in self.state.clusters.values())
            field, advice = "spec.clusterSelector", f"the joined clusters have {labels}: change the selector"
        elif why.part == "task":
            index = next(i for i, task in enumerate(spec.tasks) if task.name == why.task)
            field, advice = f"spec.tasks[{index}].resources", "ask for less"
        elif why.part == "placement":
            field, advice = "spec.placement", "use pack, or make the gang smaller"
        else:
            field = "spec.minAvailable" if spec.min_available is not None else "spec.tasks"
            advice = "a job runs whole on one cluster: make the gang smaller"
        return [{"field": prefix + field, "message": f"{why.reason}; {advice}, {ESCAPE}"}]

    def _command(self, record: JobRecord, prefix: str) -> Fields:
        spec = record.spec
        backends = {self.backends[view.name] for view in self.state.matching(spec.cluster_selector)}
        if not backends or not backends <= command_backends():
            return []
        for index, task in enumerate(spec.tasks):
            if not task.command:
                message = (
                    f"required: every cluster this job may run on has the {', '.join(sorted(backends))} backend, "
                    f"which starts a task by running its command; add a command, {ESCAPE}"
                )
                return [{"field": f"{prefix}spec.tasks[{index}].command", "message": message}]
        return []


class Admission:
    """The joined clusters a replica checks submits against (see the module's docstring)."""

    def __init__(self, clusters: ClusterService, clock: Clock) -> None:
        self._clusters = clusters
        self._clock = clock
        self._read: tuple[float, int, JoinedClusters] | None = None  # when, after which change, what

    async def refused(self, firsts: list[JobRecord], prefixes: list[str]) -> tuple[JobRecord, Fields] | None:
        now, changes = self._clock.now(), self._clusters.changes
        if self._read is not None and now - self._read[0] < JOINED_FRESH_FOR and self._read[1] == changes:
            if self._read[2].refused(firsts, prefixes) is None:
                return None
        self._read = (now, changes, await JoinedClusters.read(self._clusters))
        return self._read[2].refused(firsts, prefixes)
