"""A job's states and the entry its history keeps for each move: the vocabulary of the lifecycle.

Kept apart from the transitions (``machine``) so the stored models can import it without importing
the machine, which works on those models.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class JobState(StrEnum):
    PENDING = "Pending"
    RESERVED = "Reserved"
    DISPATCHED = "Dispatched"
    ADMITTED = "Admitted"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"
    UNSCHEDULABLE = "Unschedulable"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def queued(self) -> bool:
        """Waiting in the global queue (not yet sent to a cluster)."""
        return self in QUEUED_STATES


TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
QUEUED_STATES = frozenset({JobState.PENDING, JobState.RESERVED, JobState.UNSCHEDULABLE})
ON_CLUSTER = frozenset({JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING})
"""Sent to a cluster and not back: the cluster's agent holds the run under the job's epoch."""


class JobEvent(BaseModel):
    """One entry of a job's history: a move between states, or a request that keeps the state (a
    cancel or a preemption asked of the cluster: ``source`` == ``target``). ``epoch`` fences runs."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    time: float
    source: JobState | None = Field(None, alias="from")
    target: JobState = Field(alias="to")
    reason: str = ""
    cluster: str = ""
    epoch: int = 0
