"""The user-facing job spec (``apiVersion: fedq/v1, kind: Job``) and the stored job record.

Specs are validated strictly (unknown fields are errors) because a typo in a batch job usually means
a job that silently runs with the wrong resources. The stored record is compact: etcd holds every
pending job, so defaults are left out of the JSON.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from federation.ids import DEFAULT_TASK
from federation.lifecycle.states import JobEvent, JobState
from federation.models.dependency import MAX_DEPENDENCIES, Dependency, Wait
from federation.models.image import IMAGE, MAX_IMAGE, check_image, check_working_dir
from federation.models.numbers import Integer, positive_seconds
from federation.models.resources import Resources
from federation.models.runtime_env import check_runtime_env
from federation.models.stored import STORED, stored
from policies import resources as res
from policies.units import MAX_DURATION

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_QUEUE_PATH = re.compile(r"^[a-z0-9]([-a-z0-9_]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9_]*[a-z0-9])?)*$")
MAX_REPLICAS = 10_000
MAX_COMMAND_BYTES = 16_384
MAX_RETRIES = 100


def documented_name(pattern: re.Pattern[str], longest: int) -> Any:
    """The OpenAPI schema of a name a validator checks by ``pattern``, so a fuzzer makes valid ones."""
    return Field(json_schema_extra={"pattern": pattern.pattern, "maxLength": longest})


def _duration(value: Any, info: ValidationInfo) -> float:
    return float(value) if stored(info) else positive_seconds(value)


Duration = Annotated[
    float,
    BeforeValidator(_duration),
    WithJsonSchema(
        {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_DURATION}, {"type": "string"}]},
        mode="validation",
    ),
]


def _check_labels(labels: dict[str, str], what: str) -> dict[str, str]:
    for key, value in labels.items():
        if len(key) > 253 or not _LABEL_KEY.match(key):
            raise ValueError(f"invalid {what} key {key!r}: use e.g. 'region' or 'example.com/zone'")
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ValueError(f"invalid {what} value {value!r} for {key!r}: letters, digits, '-', '_', '.'")
    return labels


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=True, allow_inf_nan=False)


class TaskSpec(StrictModel):
    name: Annotated[str, documented_name(_DNS_LABEL, 63)] = DEFAULT_TASK
    replicas: Integer = Field(1, ge=1, le=MAX_REPLICAS)
    resources: Resources = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    runtime: Duration | None = None
    """How long each task runs on a simulated backend; real backends run ``command`` instead."""
    image: Annotated[str, documented_name(IMAGE, MAX_IMAGE)] | None = None
    """The container image (Kubernetes); None: the cluster's ``kubernetes.defaultImage``."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(None, alias="imagePullPolicy")
    working_dir: str | None = Field(None, alias="workingDir", max_length=4096)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str, info: ValidationInfo) -> str:
        if stored(info):
            return value
        if len(value) > 63 or not _DNS_LABEL.match(value):
            raise ValueError(f"invalid task name {value!r}: lower-case letters, digits and '-', at most 63")
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if stored(info):
            return value
        if sum(len(part) for part in value) > MAX_COMMAND_BYTES:
            raise ValueError(f"command is longer than {MAX_COMMAND_BYTES} characters")
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None or stored(info) else check_image(value)

    @field_validator("working_dir")
    @classmethod
    def _working_dir(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None or stored(info) else check_working_dir(value)

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if stored(info):
            return value
        for key in value:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                raise ValueError(f"invalid environment variable name {key!r}")
        return value


class ArraySpec(StrictModel):
    """``count`` elements, numbered 0 to count-1 (the ids ``<id>-0``...)."""

    count: Integer = Field(ge=1)
    parallelism: Integer | None = Field(None, ge=1)
    """At most this many of the array's elements on clusters at once (Slurm's ``--array=0-19%4``); the
    others wait with reason ArrayThrottle. None: no limit."""


class Metadata(StrictModel):
    name: Annotated[str, documented_name(_DNS_LABEL, 63)]
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > 63 or not _DNS_LABEL.match(value):
            raise ValueError(f"invalid job name {value!r}: lower-case letters, digits and '-', at most 63")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_labels(value, "label")


class JobSpecBody(StrictModel):
    queue: Annotated[str, documented_name(_QUEUE_PATH, 255)]
    priority: Integer = Field(0, ge=-1_000_000, le=1_000_000)
    walltime: Duration | None = None
    min_available: Integer | None = Field(None, alias="minAvailable", ge=1)
    preemptible: bool = False
    cluster_selector: dict[str, str] = Field(default_factory=dict, alias="clusterSelector")
    placement: Literal["pack", "spread"] = "pack"
    """How a job's tasks share a cluster's nodes: ``pack`` onto as few as fit them, ``spread`` one task
    per node (a Ray gang's placement group is then STRICT_SPREAD, else PACK)."""
    tasks: list[TaskSpec] = Field(min_length=1, max_length=64)
    array: ArraySpec | None = None
    max_retries: Integer | None = Field(None, alias="maxRetries", ge=0, le=MAX_RETRIES)
    """Failed runs retried before the job ends Failed; None: the federation's ``jobs.maxRetries``."""
    runtime_env: dict[str, Any] | None = Field(None, alias="runtimeEnv")
    """Ray's runtime env for every task (Ray's schema, passed on unchanged); only Ray clusters run it."""
    depends_on: list[Dependency] = Field(default_factory=list, alias="dependsOn", max_length=MAX_DEPENDENCIES)
    """What the job waits for before it may be considered (``federation.dependencies``)."""

    @field_validator("queue")
    @classmethod
    def _queue(cls, value: str, info: ValidationInfo) -> str:
        if stored(info):
            return value
        if value.startswith("root."):
            value = value[len("root.") :]
        if not _QUEUE_PATH.match(value):
            raise ValueError(f"invalid queue path {value!r}: dotted lower-case names like 'research.vision'")
        return value

    @field_validator("runtime_env")
    @classmethod
    def _runtime_env(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        if stored(info) or value is None:
            return value
        return check_runtime_env(value)

    @field_validator("cluster_selector")
    @classmethod
    def _selector(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if stored(info):
            return value
        return _check_labels(value, "clusterSelector")

    @model_validator(mode="after")
    def _gang(self, info: ValidationInfo) -> JobSpecBody:
        if stored(info):
            return self
        names = [task.name for task in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError("task names must be unique within a job")
        total = self.total_replicas
        if total > MAX_REPLICAS:
            raise ValueError(f"a job may have at most {MAX_REPLICAS} tasks in all (got {total})")
        if self.min_available is not None and self.min_available > total:
            raise ValueError(f"minAvailable ({self.min_available}) is more than the job's {total} tasks")
        return self

    @property
    def total_replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)

    @property
    def gang_size(self) -> int:
        return self.min_available if self.min_available is not None else self.total_replicas

    def total_resources(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for task in self.tasks:
            res.iadd(total, task.resources, task.replicas)
        return total


class JobManifest(StrictModel):
    api_version: Literal["fedq/v1"] = Field("fedq/v1", alias="apiVersion")
    kind: Literal["Job"] = "Job"
    metadata: Metadata
    spec: JobSpecBody


class JobRecord(BaseModel):
    """What the store keeps per job. Written only through CAS transitions."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str
    name: str
    tenant: str
    queue: str
    priority: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    spec: JobSpecBody
    array_id: str = ""
    array_index: int | None = None
    submit_time: float
    state: JobState = JobState.PENDING
    reason: str = ""
    cluster: str = ""
    epoch: int = 0
    attempt: int = 0
    retries: int = 0  # failed runs retried (``attempt`` also counts requeues that were no fault of the job)
    retry_at: float | None = None  # after a failed run: not dispatched again before this time
    cancel_requested: bool = False  # someone asked to cancel it: it ends Cancelled, whatever else happens
    evicting: bool = False  # reclaim asked its cluster to stop it: it goes back to the queue when stopped
    requeue_requested: bool = False  # someone asked to requeue it: back to the queue when stopped, not a retry
    held_by: str | None = None  # who holds it: queued, it keeps its place in line but is never dispatched
    held_at: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    exit_code: int | None = None
    log_tail: str = ""
    preemptions: int = 0
    after: list[Wait] = Field(default_factory=list)  # its dependsOn on ids, resolved at submit
    events: list[JobEvent] = Field(default_factory=list)

    def to_bytes(self) -> bytes:
        # The serializer itself: model_dump_json makes a str to encode again, about a quarter more per record.
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_defaults=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> JobRecord:
        return cls.model_validate_json(data, context=STORED)

    def released_at(self) -> float:
        """When the job last let go of what it held: its end, or for a job with none (back in the
        queue) the time of its last change of state."""
        if self.end_time is not None:
            return self.end_time
        return self.events[-1].time if self.events else self.submit_time

    def left_at(self, started: float) -> float | None:
        """When the run that started at ``started`` let go of its cluster, from the history: the first
        move back to the queue or to an end after that run's Running event (the one nearest ``started``:
        the event has the server's time, the start the agent's). Its end time for an end; None when
        that run has not ended, or the history shows no run."""
        runs = [i for i, event in enumerate(self.events) if event.target is JobState.RUNNING]
        if not runs:
            return None
        at = min(runs, key=lambda i: abs(self.events[i].time - started))
        for event in self.events[at + 1 :]:
            if event.target.terminal:
                return self.end_time if self.end_time is not None else event.time
            if event.target.queued:
                return event.time
        return None

    def summary(self) -> dict[str, Any]:
        """The list view: what ``fedq jobs`` shows, without the spec or the history; with what tells why
        it waits (``federation.waits``) only when set, as the index keeps one per job."""
        waiting = {
            "array_id": self.array_id or None,
            "array_index": self.array_index,
            "held_by": self.held_by,
            "retry_at": self.retry_at,
            "waits": len(self.after) or None,
        }
        return {
            "id": self.id,
            "name": self.name,
            "tenant": self.tenant,
            "queue": self.queue,
            "state": self.state.value,
            "priority": self.priority,
            "submit_time": self.submit_time,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "cluster": self.cluster,
            "reason": self.reason,
            "attempt": self.attempt,
            **{key: value for key, value in waiting.items() if value is not None},
        }
