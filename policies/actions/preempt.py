"""preempt: within a queue, a starving job evicts lower-priority preemptible work.

Arguments: ``gracePeriod`` (a victim must have run this long), ``maxEvictions`` per cycle,
``lookahead`` (stop after this many starving jobs in a row found no room).
"""

from __future__ import annotations

from collections.abc import Callable

from policies.actions.evicting import Evictor, run_evictions
from policies.framework.registry import register_action
from policies.framework.session import Action, Session
from policies.snapshot import JobInfo, TaskInfo


@register_action
class Preempt(Action):
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        evictor = Evictor(
            ssn,
            "preemptable",
            "by higher-priority job {job}",
            self.arguments.duration("gracePeriod", 0),
            int(self.arguments.number("maxEvictions", 1 << 30)),
            "preempt",
        )

        def same_queue(job: JobInfo) -> Callable[[TaskInfo], bool]:
            return lambda v: ssn.jobs[v.job].queue == job.queue

        run_evictions(ssn, evictor, int(self.arguments.number("lookahead", 64)), same_queue)
