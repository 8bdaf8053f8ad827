"""enqueue: admit pending jobs into the cycle while their minimum gang fits the admission window.

The window is the idle capacity times ``overcommitFactor`` (Volcano's overcommit plugin, 1.2 by
default); plugins may veto (proportion: the queue's cap). It walks jobs in scheduling order and
stops after ``lookahead`` consecutive refusals, so 100,000 pending jobs cost only what fits.
"""

from __future__ import annotations

from policies import resources as res
from policies.format import format_resources
from policies.framework.decisions import NOT_ENQUEUED, split_reason
from policies.framework.jobs import OrderedJobs
from policies.framework.registry import register_action
from policies.framework.session import Action, Session


@register_action
class Enqueue(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        factor = self.arguments.number("overcommitFactor", 1.2)
        lookahead = int(self.arguments.number("lookahead", 64))
        free = (res.add(n.idle, n.releasing) if n.releasing else n.idle for n in ssn.nodes if not n.unschedulable)
        window = res.scale(res.total(free), factor)
        admitted: set[str] = set()
        refused = 0
        jobs = OrderedJobs(ssn)
        while refused < lookahead:
            job = jobs.pop()
            if job is None:
                break
            if ssn.ready_count(job) + ssn.pipelined_count(job) > 0:
                admitted.add(job.id)
                continue
            need = job.min_request()
            if not res.fits(need, window):
                held = f"admission window {format_resources(window)} cannot hold {format_resources(need)}"
                ssn.why(job, NOT_ENQUEUED, self.name, held)
                refused += 1
                continue
            veto = ssn.job_enqueueable(job)
            if veto is not None:
                code, message = split_reason(str(veto[1]))
                ssn.why(job, code, veto[0], message)
                refused += 1
                continue
            res.isub(window, need)
            admitted.add(job.id)
            refused = 0
        ssn.inqueue = admitted
