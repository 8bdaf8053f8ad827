"""Bodies and answers of the job actions (hold, release, requeue, update, and those in bulk), for the
OpenAPI document; kept apart from ``views`` so the actions' routes own their vocabulary."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from federation.lifecycle import JobState
from federation.models.numbers import Integer


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class JobChange(_Body):
    """``PATCH /v1/jobs/{id}`` of a queued job: what to change (at least one), validated as at submit.
    A tenant may only shorten the walltime."""

    priority: Integer | None = None
    queue: str | None = None
    walltime: str | float | None = None
    """A duration such as ``"30m"``, or seconds."""


class Action(StrEnum):
    CANCEL = "cancel"
    HOLD = "hold"
    RELEASE = "release"
    REQUEUE = "requeue"


class JobAction(_Body):
    """``POST /v1/jobs/actions``: one action on several jobs, named by ``ids``, by ``array`` (every
    element of that array) or by the filters ``state``/``queue``/``tenant`` (a tenant's own jobs only)."""

    action: Action
    ids: list[str] | None = Field(None, min_length=1)
    array: str | None = None
    state: JobState | None = None
    queue: str | None = None
    tenant: str | None = None


class Acted(_Body):
    """One job after an action; ``changed`` false: it was already as asked."""

    id: str
    state: str
    changed: bool
    reason: str


class Refusal(_Body):
    id: str
    message: str


class ActionTally(_Body):
    """What a bulk action did: how many jobs it matched and changed, those already as asked, and
    those it could not act on (at most 100 listed; ``refused`` counts them all)."""

    action: str
    matched: int
    changed: int
    unchanged: int
    refused: int
    refusals: list[Refusal]
