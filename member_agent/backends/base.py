"""The one protocol every member-cluster backend speaks (simulated, ray, kubernetes).

Synchronous on purpose: the Kubernetes client and Ray's API are blocking, and the simulator drives
the simulated backend in-line on a virtual clock. The agent calls backends from a worker thread.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Protocol, runtime_checkable


class TaskPhase(str, Enum):
    """Backend-level task phases; the agent maps them onto Volcano's task states."""

    PENDING = "Pending"  # accepted by the backend, not yet running (e.g. pod created, not started)
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    KILLED = "Killed"  # cancelled, preempted, fenced or over walltime

    @property
    def terminal(self) -> bool:
        return self in (TaskPhase.SUCCEEDED, TaskPhase.FAILED, TaskPhase.KILLED)


@dataclass(frozen=True)
class NodeView:
    """One node as the backend sees it. ``used`` includes work the agent did not start."""

    name: str
    allocatable: dict[str, float]
    used: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple[str, ...] = ()

    def free(self) -> dict[str, float]:
        return {r: q - self.used.get(r, 0.0) for r, q in self.allocatable.items()}


@dataclass(frozen=True)
class TaskLaunch:
    """One task of one job, bound to a node by the local session scheduler."""

    job_id: str
    task_name: str
    index: int
    epoch: int
    node: str
    resources: dict[str, float]
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    walltime: float | None = None  # seconds; the backend kills the task when it overruns
    runtime: float | None = None  # simulated backend only: how long the task really runs
    image: str | None = None  # Kubernetes: the container image; None: the cluster's default
    image_pull_policy: str | None = None
    working_dir: str | None = None
    runtime_env: dict[str, Any] | None = None  # Ray backend only: Ray's runtime env, as the job gave it
    log_limit: int | None = None  # bytes of output the backend keeps (the federation's logs.maxBytesPerJob)
    placement: Literal["pack", "spread"] = "pack"  # spec.placement: with "spread" each task has a node of its own

    @property
    def task_id(self) -> str:
        return task_id(self.job_id, self.task_name, self.index)


@dataclass(frozen=True)
class TaskReport:
    """What a backend last saw of one task: the agent turns these into job states for the federation."""

    job_id: str
    task_name: str
    index: int
    epoch: int
    phase: TaskPhase
    node: str = ""
    exit_code: int | None = None
    reason: str = ""
    log_tail: str = ""
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def task_id(self) -> str:
        return task_id(self.job_id, self.task_name, self.index)


@dataclass(frozen=True)
class LogLines:
    """New output of one stream (``stdout``/``stderr``) of one run: ``lines`` as (time printed, text),
    numbered in their stream from ``first``; ``dropped``: bytes not kept past the launch's ``log_limit``;
    ``ended``: the run has ended and this is the stream's last."""

    job_id: str
    task_name: str
    index: int
    epoch: int
    stream: str
    first: int
    lines: tuple[tuple[float, str], ...] = ()
    dropped: int = 0
    ended: bool = False


def task_id(job_id: str, task_name: str, index: int) -> str:
    return f"{job_id}/{task_name}-{index}"


class LaunchError(RuntimeError):
    """A gang could not be started; the backend has already undone whatever it started of it."""


class JobRejected(LaunchError):
    """The job itself can never start on this backend (not the cluster's fault, e.g. Ray and no
    command): its agent fails it at once rather than handing it back to be dispatched again."""


@runtime_checkable
class Backend(Protocol):
    name: str

    def nodes(self) -> list[NodeView]:
        """Every node with allocatable, used (by anything, fedq or not), labels and cordon state."""
        ...

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        """Start every task of ``gang`` on its node, or none: raise ``LaunchError`` after cleaning up.
        A later call may start more tasks of a job already running (same epoch, other tasks): an
        elastic job's tasks beyond its gang, launched as room allows."""
        ...

    def kill(
        self, job_id: str, epoch: int | None = None, reason: str = "cancelled", tasks: Collection[str] | None = None
    ) -> None:
        """Stop a job's tasks (all epochs when ``epoch`` is None; only the task ids ``tasks`` when given,
        the rest running on); their final status is KILLED."""
        ...

    def poll(self) -> list[TaskReport]:
        """Status changes since the previous call, oldest first; each change is returned once."""
        ...

    def tasks(self) -> list[TaskReport]:
        """The current status of every task the backend knows of: what a restarted agent reconciles from."""
        ...

    def logs(self) -> list[LogLines]:
        """Output its runs printed since the previous call, each line once; a run's last lines (``ended``)
        come no later than the call after ``poll`` returned its final status."""
        ...

    def close(self) -> None: ...
