"""What the API answers, as models: each route declares one (``response_model``), so the OpenAPI document
says what a client or a fuzzer gets back, and FastAPI checks every answer against it.

Routes answer with ``response_model_exclude_unset``: a view carries the keys the handler gave, no more.
Views that other modules grow (a job's summary, an explanation) allow extra keys.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from federation.lifecycle.states import JobEvent
from federation.models import JobRecord


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Submitted(_View):
    """One job: ``id``; an array: ``id`` (the array's) and ``ids``; a bulk request: ``ids``."""

    id: str | None = None
    ids: list[str] | None = None


class WaitView(_View):
    """A short code (Slurm's squeue reason where Slurm has one), what it means for this job, and its
    projected start when the scheduler has one (its reservation's, or its retry time)."""

    code: str
    text: str
    start: float | None = None


class JobSummary(_Open):
    id: str
    name: str
    tenant: str
    queue: str
    state: str
    priority: int
    submit_time: float
    start_time: float | None = None
    """When its latest run started (None: not yet, or an index entry written before it was kept)."""
    end_time: float | None = None
    cluster: str
    reason: str
    attempt: int
    array_id: str | None = None
    array_index: int | None = None
    held_by: str | None = None
    retry_at: float | None = None
    waits: int | None = None
    """How many ``dependsOn`` entries it has (left out: none)."""
    wait: WaitView | None = None
    """Why it is not running yet (``federation.waits``); null unless it is queued."""


class JobDetail(JobRecord):
    """A job's record, with why it is not running yet (null unless it is queued)."""

    wait: WaitView | None = None


class JobPage(_View):
    items: list[JobSummary]
    continue_: str | None = Field(alias="continue")
    """Pass it back for the next page; null at the end."""


class Reservation(_Open):
    """A reservation the leader's last cycle booked: ``clusters`` maps each cluster it holds room on to
    the number of the job's tasks held there (an object, not a list: a job runs whole on one cluster, so
    it has one key today); ``start`` and ``end`` are epoch seconds; ``tenant`` is the job's (left out of
    another tenant's reservation, as is its ``job``)."""

    clusters: dict[str, int]
    start: float
    end: float
    tenant: str | None = None


class OtherReservation(Reservation):
    """Another job's reservation, which may hold this one back; ``job`` is None when the caller may not
    read that job (another tenant's)."""

    job: str | None


class Explanation(_Open):
    """Why a job waits (see the README); keys past these depend on its state: a queued job's carry
    ``reservation`` (its own, or null) and ``other_reservations``, a finished or running one's only
    ``summary``."""

    id: str
    state: str
    queue: str
    tenant: str
    summary: str
    reservation: Reservation | None = None
    other_reservations: list[OtherReservation] | None = None


class Cancelled(_View):
    id: str
    state: str
    cancel_requested: bool


class QueueView(_View):
    path: str
    name: str
    weight: float
    guarantee: dict[str, float]
    cap: dict[str, float]
    accept_surplus: bool = Field(alias="acceptSurplus")
    priority_factor: float = Field(alias="priorityFactor")
    tenants: list[str]
    pending: int
    running: int
    children: list[QueueView]


class QueueTreeView(_View):
    queues: list[QueueView]


class Applied(_View):
    applied: list[str]
    """Every queue path of the applied tree."""


class IssuedToken(_View):
    """A new token, shown this once; ``tenant`` or ``cluster`` for the tokens made under those paths."""

    id: str
    kind: str
    name: str
    token: str
    expires_at: float
    tenant: str | None = None
    cluster: str | None = None


class TokenView(_View):
    id: str
    kind: str
    name: str
    created_at: float | None
    expires_at: float | None
    revoked_at: float | None
    revoked_because: str | None
    state: str


class TokenList(_View):
    items: list[TokenView]


class Joined(_View):
    cluster: str
    credential: str
    lease: float | None = None
    """How long the agent's runs may outlive its last answer from the federation (``cluster.lostAfter``)."""


class NodeShapeView(_View):
    """Identical nodes of one cluster, as its agent reported them (one shape per node on small clusters)."""

    name: str
    count: int
    allocatable: dict[str, float]
    free: dict[str, float]
    labels: dict[str, str]
    unschedulable: bool


class ClusterView(_Open):
    name: str
    backend: str
    labels: dict[str, str]
    state: str
    cordoned: bool = False
    nodes: int
    capacity: dict[str, float]
    free: dict[str, float]
    running: int
    last_report_age: float | None
    lost_after: float | None = None
    """``cluster.lostAfter``: a cluster unheard for longer is Unreachable."""
    shapes: list[NodeShapeView] = Field(default_factory=list)


class ClusterList(_View):
    items: list[ClusterView]


class Cordoned(_View):
    name: str
    cordoned: bool


class Identity(_View):
    """Whom the caller's token names: what a page shows and offers (an admin's views, a tenant's own)."""

    role: str
    name: str
    token_id: str


class SchedulerHealth(_View):
    """Whether this replica's scheduler loop gets through its turns (``federation.scheduler.health``)."""

    ok: bool
    failures: int
    error: str
    since: float | None
    last_good: float | None


class Health(_View):
    ok: bool
    revision: int
    leader: bool | None
    scheduler: SchedulerHealth | None = None


class JobHistory(_View):
    """``GET /v1/jobs/{id}/events`` without ``watch``: the history as of ``revision`` (a stream resumes after it)."""

    id: str
    revision: int
    state: str
    events: list[JobEvent]
