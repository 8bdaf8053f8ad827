"""What can happen to a job (events) and what a move sets off (effects), as plain data.

Events come from three places: the scheduler (dispatch, marks, reclaim, a lost cluster, an admission
timeout), the job's cluster through its agent's reports (admitted, started, finished, handed back),
and people through the API (cancel, hold, release, requeue, update). Effects are what the caller
carries out: the production path turns the key effects into ops of the job's CAS txn
(``federation.jobs.change_of``), the simulator into its in-memory replies, and both feed the
accounting the same run starts and stops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from federation.lifecycle.states import JobState

if TYPE_CHECKING:
    from federation.models import JobSpecBody

# ---- events ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dispatch:
    """The scheduler sends a queued job to ``cluster`` under a new epoch."""

    cluster: str


@dataclass(frozen=True, slots=True)
class Mark:
    """The scheduler's visible reason for waiting: Pending, Reserved or Unschedulable."""

    target: JobState
    reason: str


@dataclass(frozen=True, slots=True)
class Reclaim:
    """The scheduler asks the job's cluster to stop it and give it back to the queue."""

    reason: str


@dataclass(frozen=True, slots=True)
class ClusterLost:
    """The job's cluster has been silent past ``cluster.requeueAfter``: its runs are written off."""

    cluster: str


@dataclass(frozen=True, slots=True)
class NotAdmitted:
    """The job's cluster took it but has not admitted it within ``cluster.admitWithin`` (``within``
    seconds): it goes back to the queue rather than wait there for ever."""

    cluster: str
    within: float


@dataclass(frozen=True, slots=True)
class Asked:
    """What someone asks of the job through the API; ``by`` names them in its history."""

    by: str


@dataclass(frozen=True, slots=True)
class Cancel(Asked):
    """Someone cancels the job: at once while it waits, through its cluster's agent while it runs."""


@dataclass(frozen=True, slots=True)
class Hold(Asked):
    """Someone holds a queued job: it keeps its place in line but is never dispatched nor reserved."""


@dataclass(frozen=True, slots=True)
class Release(Asked):
    """Someone lets a held job go: it is considered again, from its old place in line."""


@dataclass(frozen=True, slots=True)
class Requeue(Asked):
    """Someone sends the job back to the queue: a run stopped through its cluster's agent, or a
    Failed or Cancelled job run again; neither counts as a retry."""


@dataclass(frozen=True, slots=True)
class Update(Asked):
    """Someone changes a queued job's priority, queue or walltime: ``spec`` is the job's spec with the
    change, validated as at submit by the sender."""

    spec: JobSpecBody


@dataclass(frozen=True, slots=True)
class DependencyUnmet:
    """A queued job waits on a dependency that can never be met (``reason`` says which): it ends
    Cancelled, or with ``cancel`` False (``jobs.killInvalidDepend: false``) stays queued saying so."""

    reason: str
    cancel: bool = True


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a run that failed for its own reasons is retried: at most ``limit`` times, the n-th after
    ``backoff(n)`` seconds."""

    limit: int
    backoff: Callable[[int], float]


NO_RETRIES = RetryPolicy(0, lambda _: 0.0)


@dataclass(frozen=True, slots=True)
class AgentUpdate:
    """What the job's cluster reports of the run it holds under ``epoch``: Admitted, Running, an end
    (Succeeded, Failed, Cancelled), or Pending (handed back: the cluster cannot run it)."""

    cluster: str
    epoch: int
    state: JobState
    time: float
    reason: str = ""
    exit_code: int | None = None
    log_tail: str = ""
    retry: RetryPolicy = NO_RETRIES
    final: bool = False  # a failure that running again would only repeat (walltime exceeded)


Event = (
    Dispatch
    | Mark
    | Reclaim
    | ClusterLost
    | NotAdmitted
    | Cancel
    | Hold
    | Release
    | Requeue
    | Update
    | DependencyUnmet
    | AgentUpdate
)

# ---- effects -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assign:
    """The cluster's agent is to pick the job up (the assignment key)."""

    cluster: str


@dataclass(frozen=True, slots=True)
class Unassign:
    cluster: str


@dataclass(frozen=True, slots=True)
class StopOrder:
    """The cluster's agent is to stop the run of ``epoch`` (the cancel order key); ``requeue`` says
    it goes back to the queue (reclaim) rather than ending Cancelled."""

    cluster: str
    epoch: int
    reason: str
    requeue: bool


@dataclass(frozen=True, slots=True)
class DropStopOrder:
    cluster: str


@dataclass(frozen=True, slots=True)
class RunStarted:
    """Usage: the job holds ``resources`` on ``cluster`` from ``at``."""

    job_id: str
    tenant: str
    queue: str
    cluster: str
    resources: dict[str, float] = field(hash=False)
    at: float


@dataclass(frozen=True, slots=True)
class RunStopped:
    """Usage: the job let go of its cluster at ``at``."""

    job_id: str
    at: float


@dataclass(frozen=True, slots=True)
class Requeued:
    """The job went back to the queue from ``cluster``; ``why`` is lost, not admitted, evicted, handed
    back, requeued (asked by someone) or retry."""

    cluster: str
    why: str
    retry_at: float | None = None


Effect = Assign | Unassign | StopOrder | DropStopOrder | RunStarted | RunStopped | Requeued
