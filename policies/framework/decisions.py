"""What a session decided: binds, evictions, pipelined tasks, reservations, and why jobs wait."""

from __future__ import annotations

from dataclasses import dataclass, field

# Reason codes: the vocabulary of `fedq explain`.
FAIR_SHARE = "fair-share"  # the queue/tenant has its fair share and others are waiting
OVERUSED = "overused"  # the queue is at its deserved share or cap
CAP = "cap"  # admitting the job would exceed its queue's cap
GANG = "gang"  # fewer than minAvailable tasks could be placed together
INVALID = "invalid"  # the job can never form its gang (not enough valid tasks)
LABELS = "labels"  # no node/cluster matches the job's selector
CORDONED = "cordoned"  # the only matching nodes are cordoned
TOO_BIG = "too-big"  # a task is larger than every node
SPREAD = "spread"  # the node holds another task of a job placed one task per node
INSUFFICIENT = "insufficient"  # resources are busy now
RESERVATION = "reservation"  # starting now would delay another job's reservation
RESERVED = "reserved"  # the job holds a reservation and starts later
PREEMPTING = "preempting"  # the job waits for the jobs stopped to make room for it
ORDER = "order"  # strict order: behind a blocked job
NOT_ENQUEUED = "not-enqueued"  # the admission window is full
WAITING = "waiting"  # has not waited long enough to reserve


def split_reason(text: str) -> tuple[str, str]:
    """Plugins answer "code: message" (or a bare code); split it for a Reason."""
    code, sep, message = text.partition(": ")
    return (code, message) if sep else (text, text)


@dataclass(slots=True, frozen=True)
class Reason:
    code: str
    source: str  # the plugin or action that holds the job
    message: str


@dataclass(slots=True, frozen=True)
class Bind:
    job: str
    task: str
    node: str


@dataclass(slots=True, frozen=True)
class Eviction:
    job: str
    task: str
    node: str
    reason: str
    action: str = ""  # the action that evicts: preempt or reclaim, each with its own budget


@dataclass(slots=True, frozen=True)
class Reservation:
    job: str
    nodes: dict[str, int]  # node (or cluster) -> tasks it holds for the job
    start: float
    end: float
    per_task: dict[str, float]  # resources held for each of those tasks


@dataclass(slots=True)
class Decisions:
    binds: list[Bind] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    pipelined: list[Bind] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)
    reasons: dict[str, list[Reason]] = field(default_factory=dict)
    queue_reasons: dict[str, Reason] = field(default_factory=dict)
    # (queue, tenant) -> why a pass went over the tenant's jobs in the queue that it had not tried yet
    tenant_reasons: dict[tuple[str, str], Reason] = field(default_factory=dict)
    # job -> queue, in the order the session first took each job up: its true line, which explain shows
    considered: dict[str, str] = field(default_factory=dict)
    plugin_seconds: dict[str, float] = field(default_factory=dict)
    action_seconds: dict[str, float] = field(default_factory=dict)

    def bound_jobs(self) -> set[str]:
        return {b.job for b in self.binds}
