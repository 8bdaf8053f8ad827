"""What a lifecycle outcome's effects mean, said once: ``carry_out`` reads them and tells a ``Carrier``.

Production and the simulator carry the same effects through different media: the job's CAS txn puts and
deletes the assignment and cancel-order keys the report handler reads into an agent's reply
(``federation.jobs.change_of``), while the simulator keeps those orders in its members' mailboxes and
hands them over as that reply would. Each carrier says only how its medium does a thing; which effect
asks for which thing is decided here, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from federation.lifecycle.events import (
    Assign,
    DropStopOrder,
    Requeued,
    RunStarted,
    RunStopped,
    StopOrder,
    Unassign,
)

if TYPE_CHECKING:
    from federation.lifecycle.machine import Outcome
    from federation.models import JobRecord


class Carrier(Protocol):
    """Where an outcome's effects are carried out for the job ``record`` (the record after the move)."""

    def assign(self, cluster: str, record: JobRecord) -> None:
        """The cluster's agent is to pick the job up, until it says it has."""

    def unassign(self, cluster: str, record: JobRecord) -> None:
        """The job's assignment to the cluster is done with."""

    def stop(self, cluster: str, record: JobRecord, order: StopOrder) -> None:
        """The cluster's agent is to stop the run ``order`` names, until it reports it stopped."""

    def drop_stop(self, cluster: str, record: JobRecord) -> None:
        """The job's stop order to the cluster is done with."""

    def usage(self, change: RunStarted | RunStopped) -> None:
        """A run starts or stops holding its resources (``lifecycle.usage`` of the record)."""

    def requeued(self, record: JobRecord, effect: Requeued) -> None:
        """The job is back in the queue (after ``effect.retry_at``, for a retry)."""


def carry_out(outcome: Outcome, carrier: Carrier) -> None:
    """Tell ``carrier`` each of the outcome's effects, in order."""
    record = outcome.record
    for effect in outcome.effects:
        if isinstance(effect, Assign):
            carrier.assign(effect.cluster, record)
        elif isinstance(effect, Unassign):
            carrier.unassign(effect.cluster, record)
        elif isinstance(effect, StopOrder):
            carrier.stop(effect.cluster, record, effect)
        elif isinstance(effect, DropStopOrder):
            carrier.drop_stop(effect.cluster, record)
        elif isinstance(effect, RunStarted | RunStopped):
            carrier.usage(effect)
        else:
            carrier.requeued(record, effect)
