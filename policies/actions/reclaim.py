"""reclaim: a queue below its deserved share takes back what other queues borrowed.

Only from queues that are reclaimable and (by the plugins' ``reclaimable`` hooks, e.g. proportion)
hold more than their deserved share; never below a guarantee, never a non-preemptible job. A
``gracePeriod`` (default 5 minutes) and ``maxEvictions`` per cycle keep fair share from thrashing.
"""

from __future__ import annotations

from collections.abc import Callable

from policies.actions.evicting import Evictor, run_evictions
from policies.framework.registry import register_action
from policies.framework.session import Action, Session
from policies.snapshot import JobInfo, TaskInfo


@register_action
class Reclaim(Action):
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        evictor = Evictor(
            ssn,
            "reclaimable",
            "reclaimed",
            self.arguments.duration("gracePeriod", 300),
            int(self.arguments.number("maxEvictions", 32)),
            "reclaim from",
        )

        def other_queues(job: JobInfo) -> Callable[[TaskInfo], bool] | None:
            if ssn.overused(job.queue) is not None:
                return None
            mine = job.queue
            return lambda v: ssn.jobs[v.job].queue != mine and ssn.queues[ssn.jobs[v.job].queue].reclaimable

        run_evictions(ssn, evictor, int(self.arguments.number("lookahead", 64)), other_queues)
