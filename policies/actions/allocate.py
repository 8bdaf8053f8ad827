"""allocate: place jobs in fair-share order; gangs commit whole or roll back.

Volcano's greedy allocate, with two fedq rules:
- a job that cannot start and may reserve (the reservation plugin says it has waited long enough)
  stops the pass: nothing jumps it here; reserve/backfill decide what may still start;
- if fair-share slices held jobs back while resources stay idle, the pie is spun again: a second
  pass where only caps and hard quotas limit (HTCondor's re-spin of leftovers);
- once a tenant (or a queue above it) holds its fair-share slice, the pass goes over the tenant's
  other jobs in that queue instead of refusing them one by one (HTCondor's negotiator stops offering
  a submitter's jobs when it reaches its submitter limit). A slice is checked against what is held
  before a job, so none of them could start in this pass whatever its size; they wait with the
  tenant's reason (``why_tenant``). With tenants at their share and deep backlogs, refusing each
  job was most of a cycle (issue 34: METACENTRUM-2009-2, 2.7 million tries in 10,000 jobs).

``maxJobs`` (0 = no limit) bounds the jobs one session starts, like Armada's per-round limit: a
federation with a deep backlog then dispatches in short cycles that keep its leader lease alive,
each one starting from the fair-share order of the moment.

With no node at all (no member cluster has reported, or every one is lost) nothing can start and no
job is to blame: each queue with jobs gets that one reason and no job is tried. Tried one by one,
each job was found too big for the largest of no nodes, and a cycle over 1,000,000 queued jobs took
minutes (issue 35).
"""

from __future__ import annotations

from policies.actions.placing import last_code, try_job
from policies.framework.decisions import FAIR_SHARE, INSUFFICIENT, split_reason
from policies.framework.jobs import OrderedJobs
from policies.framework.registry import register_action
from policies.framework.session import Action, Session
from policies.snapshot import JobInfo


@register_action
class Allocate(Action):
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        self.started = 0
        self.limit = int(self.arguments.number("maxJobs", 0))
        if not ssn.nodes:
            self._nowhere(ssn)
            return
        self._pass(ssn)
        if ssn.share_held and not ssn.halted and not self._full() and self.arguments.flag("respin", True):
            ssn.surplus = True
            self._pass(ssn)
            ssn.surplus = False

    def _nowhere(self, ssn: Session) -> None:
        lanes = ssn.index.lanes() if ssn.index is not None else [(job.queue, job.tenant) for job in ssn.pending_jobs]
        noun = ssn.placer.noun
        for queue in {queue for queue, _ in lanes}:
            ssn.why_queue(queue, INSUFFICIENT, self.name, f"there is no {noun} to run it on")

    def _pass_over(self, ssn: Session, jobs: OrderedJobs, job: JobInfo) -> None:
        """The job was refused for fair share: if its tenant (or a queue above it) holds its slice, so
        would be every other job of the tenant not yet tried, and the pass goes on without them."""
        held_back = ssn.tenant_held_back(job.queue, job.tenant)
        if held_back is not None:
            jobs.pass_over(job.queue, job.tenant)
            code, message = split_reason(str(held_back[1]))
            ssn.why_tenant(job.queue, job.tenant, code, held_back[0], message)

    def _full(self) -> bool:
        return 0 < self.limit <= self.started

    def _pass(self, ssn: Session) -> None:
        jobs = OrderedJobs(ssn, ssn.inqueue)
        while not self._full() and (job := jobs.pop()) is not None:
            if not ssn.to_place(job) or job.id in ssn.reserved:
                continue
            kept, waitable = try_job(ssn, job)
            if not kept and last_code(ssn, job) == FAIR_SHARE:
                self._pass_over(ssn, jobs, job)
            if kept:
                self.started += 1
                if ssn.to_place(job):
                    jobs.push_back(job)
            elif waitable and ssn.job_reservable(job):
                ssn.blocked.append(job)
                ssn.halted = True
                return
