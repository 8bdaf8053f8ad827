"""The scenario a simulation runs: clusters of nodes, the queue tree, the policy and the jobs.

A scenario YAML is validated with the production models (queues as ``configs/queues.yaml``, policy as
``configs/federation.yaml``, job fields as a job spec), so a scenario that loads is one the service
would accept. The engine works on the plain ``Scenario`` below; SWF traces build one directly, without
per-job validation, because a trace has tens of thousands of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from federation.config import FederationConfig, load_yaml_file
from federation.dependencies import find_cycle
from federation.models import JobSpecBody, QueueConfig, QueueTreeConfig
from federation.models.dependency import Dependency
from federation.models.job import _check_labels
from member_agent.backends.base import NodeView
from member_agent.backends.simulated import nodes_from_groups
from policies.units import parse_duration


@dataclass(slots=True)
class SimJob:
    """One job of a scenario; times are seconds from the scenario start.

    ``spec`` is the job spec the federation schedules (its tasks carry ``runtime``, which only the
    simulated backend reads); ``runtime`` is the job's actual run time, ``spec.walltime`` its limit.
    """

    id: str
    tenant: str
    submit: float
    runtime: float
    spec: JobSpecBody
    depends_on: list[Dependency] = field(default_factory=list)
    """On other jobs of the scenario, by their ``id`` (``job: ID``): the production rule decides."""
    hold: bool = False
    """Submitted held (as ``fedq submit --hold``): it waits in line until a ``release`` action."""
    array_id: str = ""
    """An element of an array entry (``<array_id>-<index>``), as the API expands one."""
    array_index: int | None = None


@dataclass(slots=True)
class SimCluster:
    name: str
    nodes: list[NodeView]
    labels: dict[str, str] = field(default_factory=dict)


ActionKind = Literal["cancel", "hold", "release", "silence"]


@dataclass(frozen=True, slots=True)
class SimAction:
    """Something people or the network do at ``at``: ``cancel``, ``hold`` or ``release`` a job (by its
    scenario id), or ``silence`` a cluster (its agent stops reaching the federation, its runs go on: a
    partition)."""

    at: float
    kind: ActionKind
    target: str


@dataclass(slots=True)
class Scenario:
    """Everything a run needs. ``jobs`` are in file order; the engine submits equal times in that order."""

    clusters: list[SimCluster]
    queues: QueueTreeConfig
    policy: FederationConfig
    jobs: list[SimJob]
    actions: list[SimAction] = field(default_factory=list)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ClusterEntry(_Strict):
    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    labels: dict[str, str] = Field(default_factory=dict)
    nodes: list[dict[str, Any]] = Field(min_length=1)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_labels(value, "cluster label")

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Checked with the other fields, so a bad node group is reported with them, at its place."""
        if not nodes_from_groups(value):
            raise ValueError("no nodes: every group has count 0")
        return value

    def build(self) -> SimCluster:
        return SimCluster(self.name, nodes_from_groups(self.nodes), dict(self.labels))


class JobEntry(JobSpecBody):
    """A job spec plus who submits it, when, and how long it really runs."""

    id: str = Field(min_length=1, max_length=128)
    tenant: str
    submit: float = Field(ge=0)
    runtime: float = Field(ge=0)
    hold: bool = False

    @field_validator("submit", "runtime", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> float:
        return parse_duration(value)

    @model_validator(mode="after")
    def _dependencies(self) -> JobEntry:
        if any(d.job is None or d.condition == "aftercorr" for d in self.depends_on):
            raise ValueError("dependsOn in a scenario names another job by its id: {job: ID, condition: afterok|...}")
        return self

    def build(self) -> list[SimJob]:
        """Each task runs for the job's runtime unless it sets its own; an array is its elements
        ``<id>-<index>``, as the API expands one (each keeps the array's spec: its throttle)."""
        tasks = [
            task if task.runtime is not None else task.model_copy(update={"runtime": self.runtime})
            for task in self.tasks
        ]
        spec = JobSpecBody.model_construct(
            queue=self.queue,
            priority=self.priority,
            walltime=self.walltime,
            min_available=self.min_available,
            preemptible=self.preemptible,
            cluster_selector=dict(self.cluster_selector),
            placement=self.placement,
            tasks=tasks,
            array=self.array,
            max_retries=self.max_retries,
        )
        if self.array is None:
            return [SimJob(self.id, self.tenant, self.submit, self.runtime, spec, list(self.depends_on), self.hold)]
        return [
            SimJob(
                f"{self.id}-{i}",
                self.tenant,
                self.submit,
                self.runtime,
                spec,
                list(self.depends_on),
                self.hold,
                self.id,
                i,
            )
            for i in range(self.array.count)
        ]


class ActionEntry(_Strict):
    """``{at: 150, cancel: j3}``, ``{at: 0, hold: j3}``, ``{at: 600, release: j3}`` or ``{at: 300, silence: west}``."""

    at: float = Field(ge=0)
    cancel: str | None = None
    hold: str | None = None
    release: str | None = None
    silence: str | None = None

    @field_validator("at", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> float:
        return parse_duration(value)

    @model_validator(mode="after")
    def _one(self) -> ActionEntry:
        if len(self._named()) != 1:
            raise ValueError("an action is one of 'cancel: JOB', 'hold: JOB', 'release: JOB' or 'silence: CLUSTER'")
        return self

    def _named(self) -> list[tuple[ActionKind, str]]:
        kinds: tuple[tuple[ActionKind, str | None], ...] = (
            ("cancel", self.cancel),
            ("hold", self.hold),
            ("release", self.release),
            ("silence", self.silence),
        )
        return [(kind, target) for kind, target in kinds if target is not None]

    @property
    def job(self) -> tuple[str, str] | None:
        """(kind, job) of an action on a job; None for a cluster's."""
        kind, target = self._named()[0]
        return None if kind == "silence" else (kind, target)

    def build(self) -> SimAction:
        kind, target = self._named()[0]
        return SimAction(self.at, kind, target)


class ScenarioFile(_Strict):
    clusters: list[ClusterEntry] = Field(min_length=1)
    queues: list[QueueConfig] = Field(min_length=1)
    policy: FederationConfig = Field(default_factory=FederationConfig)
    jobs: list[JobEntry] = Field(default_factory=list)
    actions: list[ActionEntry] = Field(default_factory=list)
    history: dict[str, Any] | None = None
    """What an export of the federation's history recorded beside its jobs (``federation.whatif.history``):
    read by ``fedq whatif``, not by the replay."""

    @model_validator(mode="after")
    def _unique(self) -> ScenarioFile:
        for what, names in (("cluster", [c.name for c in self.clusters]), ("job", [j.id for j in self.jobs])):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise ValueError(f"duplicate {what} name {name!r}")
                seen.add(name)
        # An array's elements are named by no dependency nor action: only whole jobs are.
        jobs, clusters = {j.id for j in self.jobs if j.array is None}, {c.name for c in self.clusters}
        for n, entry in enumerate(self.jobs):
            for d, dependency in enumerate(entry.depends_on):
                if dependency.job not in jobs:
                    raise ValueError(f"jobs[{n}].dependsOn[{d}].job: no job {dependency.job!r} in the scenario")
        numbers = {j.id: n for n, j in enumerate(self.jobs)}
        ring = find_cycle([[numbers[str(d.job)] for d in j.depends_on] for j in self.jobs])
        if ring is not None:
            raise ValueError(f"dependency cycle: {' -> '.join(self.jobs[n].id for n in ring)}")
        submits = {j.id: j.submit for j in self.jobs}
        for n, action in enumerate(self.actions):
            if action.job is not None:
                kind, job = action.job
                if job not in jobs:
                    raise ValueError(f"actions[{n}].{kind}: no job {job!r} in the scenario")
                if action.at < submits[job]:
                    raise ValueError(
                        f"actions[{n}].{kind}: at {action.at:g}s is before job {job!r} is submitted "
                        f"({submits[job]:g}s); a job submitted held has 'hold: true'"
                    )
            if action.silence is not None and action.silence not in clusters:
                raise ValueError(f"actions[{n}].silence: no cluster {action.silence!r} (known: {sorted(clusters)})")
        return self

    def build(self) -> Scenario:
        return Scenario(
            clusters=[c.build() for c in self.clusters],
            queues=QueueTreeConfig(queues=self.queues),
            policy=self.policy,
            jobs=[element for j in self.jobs for element in j.build()],
            actions=sorted((a.build() for a in self.actions), key=lambda a: a.at),
        )


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML; errors name the file and the offending field."""
    document = load_yaml_file(path)
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a scenario is a mapping with clusters, queues, policy and jobs")
    try:
        return ScenarioFile.model_validate(document).build()
    except ValidationError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
