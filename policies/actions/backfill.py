"""backfill: reservations for blocked jobs, then later jobs that do not delay any of them.

After allocate stops at a blocked job, the job gets a reservation at its earliest start (the
shadow time) on the nodes that will have room. Jobs behind it then start now only where they do
not delay a reservation: they end before its start, or use only the extra resources it leaves.
Every later job that is blocked and may reserve books one too, up to ``depth`` (1 = EASY, N, or
'all' = conservative backfilling). ``enabled: false`` keeps strict order: nothing jumps the head.
The scan stops after ``lookahead`` jobs in a row that could not start, so a full cluster with a
long backlog costs a bounded amount per cycle.
"""

from __future__ import annotations

from policies.actions.placing import try_job
from policies.actions.reserving import book, book_blocked, depth_of
from policies.framework.decisions import ORDER
from policies.framework.jobs import OrderedJobs
from policies.framework.registry import register_action
from policies.framework.session import Action, Session


@register_action
class Backfill(Action):
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        depth = depth_of(self.arguments.get("depth", 1))
        misses = int(self.arguments.number("lookahead", 256))
        head = ssn.blocked[0] if ssn.blocked else None
        book_blocked(ssn, depth)
        if not ssn.halted:
            return
        if not self.arguments.flag("enabled", True):
            if head is not None:
                ssn.why_queue(
                    head.queue, ORDER, self.name, "strict order: every job waits behind the blocked job first in line"
                )
            return
        jobs = OrderedJobs(ssn, ssn.inqueue)
        # What backfills uses capacity that would otherwise stay idle until the reservation: fair-share
        # slices do not hold it back (caps still do), as in allocate's second, surplus pass.
        ssn.surplus = True
        try:
            self._scan(ssn, jobs, depth, misses)
        finally:
            ssn.surplus = False

    def _scan(self, ssn: Session, jobs: OrderedJobs, depth: int, misses: int) -> None:
        missed = 0
        while missed < misses and (job := jobs.pop()) is not None:
            if not ssn.to_place(job) or job.id in ssn.reserved:
                continue
            kept, waitable = try_job(ssn, job)
            if kept:
                missed = 0
                if ssn.to_place(job):
                    jobs.push_back(job)
                continue
            missed += 1
            if waitable and len(ssn.reserved) < depth and ssn.job_reservable(job):
                book(ssn, job)
