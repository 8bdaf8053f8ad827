"""proportion: each queue's deserved resources by water-filling over the queue tree.

Deserved = weight-proportional division of the capacity, at least min(guarantee, request), at most
min(cap, request), level by level (``policies.shares.divide_tree``), after Volcano's proportion
plugin. A queue allocates only within its deserved share (and every ancestor's), enqueues only
within its cap, and lends what it does not use: reclaim takes back only what a queue holds above
its deserved share.
"""

from __future__ import annotations

from policies import resources as res
from policies.format import format_quantity, format_resources
from policies.framework.decisions import CAP, OVERUSED
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.resources import EPS, Resources
from policies.shares import Claim, divide_tree
from policies.snapshot import ROOT, JobInfo, TaskInfo


def share(allocated: Resources, deserved: Resources) -> float:
    """Volcano's share: max over resources of allocated/deserved (x/0 counts as 1)."""
    out = 0.0
    for name, qty in allocated.items():
        if qty <= EPS:
            continue
        want = deserved.get(name, 0.0)
        out = max(out, qty / want if want > EPS else 1.0)
    return out


@register_plugin
class Proportion(Plugin):
    name = "proportion"
    ssn: Session
    deserved: dict[str, Resources]
    inqueue: dict[str, Resources]
    verdicts: dict[str, tuple[int, str | None]]  # queue -> (the root's allocated_version, overused's answer)

    def hooks(self) -> dict[str, Fn]:
        return {
            "queue_order": self.queue_order,
            "queue_share": self.queue_share,
            "overused": self.overused,
            "allocatable": self.allocatable,
            "job_enqueueable": self.job_enqueueable,
            "reclaimable": self.reclaimable,
        }

    def on_session_open(self, ssn: Session) -> None:
        claims = {
            q: Claim(info.weight, info.guarantee, info.cap, info.accept_surplus, ssn.requested.get(q, {}))
            for q, info in ssn.queues.items()
            if q != ROOT
        }
        self.ssn = ssn
        self.deserved = divide_tree(ssn.capacity, claims, ssn.children)
        self.inqueue = {}
        self.verdicts = {}

    def queue_order(self, queue: str) -> tuple[float, ...]:
        return self.ssn.tree_key(queue, self.queue_share)

    def queue_share(self, queue: str) -> float:
        return share(self.ssn.allocated[queue], self.deserved[queue])

    def overused(self, queue: str) -> str | None:
        """Asked on every pop; the answer changes only with an allocation, which moves the root's
        allocated_version, so it is worked out again only then."""
        version = self.ssn.allocated_version.get(ROOT, 0)
        known = self.verdicts.get(queue)
        if known is None or known[0] != version:
            known = self.verdicts[queue] = (version, self._overused(queue))
        return known[1]

    def _overused(self, queue: str) -> str | None:
        ssn = self.ssn
        for q in ssn.ancestry(queue):
            want, got = self.deserved[q], ssn.allocated[q]
            if all(v <= got.get(r, 0.0) + EPS for r, v in want.items()):
                cap = ssn.queues[q].cap if q in ssn.queues else None
                if cap and all(got.get(r, 0.0) + EPS >= v for r, v in cap.items() if r in want):
                    return f"{CAP}: queue {q} holds {format_resources(got)}, its cap is {format_resources(cap)}"
                held, deserved = format_resources(got), format_resources(want)
                return f"{OVERUSED}: queue {q or 'root'} holds {held}, its deserved share is {deserved}"
        return None

    def allocatable(self, task: TaskInfo, job: JobInfo) -> str | None:
        ssn = self.ssn
        for q in ssn.ancestry(job.queue):
            want, got = self.deserved[q], ssn.allocated[q]
            for r, qty in task.resources.items():
                if qty > 0 and got.get(r, 0.0) + qty > want.get(r, 0.0) + EPS:
                    deserved = format_quantity(r, want.get(r, 0.0))
                    return f"{OVERUSED}: queue {q} would exceed its deserved {r} ({deserved})"
        return None

    def job_enqueueable(self, job: JobInfo) -> str | None:
        ssn, inqueue = self.ssn, self.inqueue
        need = job.min_request()
        for q in ssn.ancestry(job.queue):
            cap = ssn.queues[q].cap
            if cap is None:
                continue
            future = res.add(res.add(ssn.allocated[q], inqueue.get(q, {})), need)
            over = [r for r in cap if future.get(r, 0.0) > cap[r] + EPS]
            if over:
                return f"{CAP}: queue {q} would exceed its cap in {', '.join(over)}"
        for q in ssn.ancestry(job.queue):
            res.iadd(inqueue.setdefault(q, {}), need)
        return None

    def reclaimable(self, _: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        ssn = self.ssn
        left: dict[str, Resources] = {}
        allowed = []
        for v in victims:
            queue = ssn.jobs[v.job].queue
            after = res.sub(left.get(queue, ssn.allocated[queue]), v.resources)
            if all(after.get(r, 0.0) + EPS >= self.deserved[queue].get(r, 0.0) for r in v.resources):
                left[queue] = after
                allowed.append(v)
        return allowed
