"""fairshare: HTCondor-style time-decayed fair share, hierarchical over the queue tree.

Usage is one scalar (billing ``weights``, default 1 unit per cpu core; or ``dominantShare``).
Each queue's slice of the capacity comes from a pie spin in proportion to 1/EUP among siblings,
with guarantees first, caps and acceptSurplus as hard limits, level by level; within a leaf the
tenants spin the leaf's slice the same way. Queues and tenants are served most-starved first
(usage / slice). A slice limits allocation in the first pass; when the allocate action spins the
pie again for leftovers (``session.surplus``), only caps and non-surplus quotas still limit.
Reclaim follows the same slices: a queue below its slice takes back only what other queues hold
above theirs, so reclaim never undoes what allocation decided (as HTCondor preempts by user priority).
"""

from __future__ import annotations

from policies import resources as res
from policies.format import format_number
from policies.framework.conf import Arguments
from policies.framework.decisions import CAP, FAIR_SHARE
from policies.framework.hooks import Fn
from policies.framework.registry import register_plugin
from policies.framework.session import Plugin, Session
from policies.resources import EPS, Resources
from policies.shares import RUP_FLOOR, Claim, divide_tree, effective_priority, pie_spin
from policies.snapshot import ROOT, JobInfo, TaskInfo, TaskStatus

PLACING = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
"""Tasks this session has placed: they belong to the job being judged, not to its queue's past."""

UNIT = "units"
INF = float("inf")


def ratio(used: float, slice_: float) -> float:
    """How starved an entity is: usage over its slice, lowest first.

    Among those that hold nothing yet the bigger slice goes first (the key is minus the slice), as
    HTCondor's negotiator serves the lowest effective priority first: a name must not decide that a
    heavy past user's one-job slice is served before a newcomer's whole one."""
    if used <= EPS:
        return -slice_
    if slice_ > EPS:
        return used / slice_
    return INF


@register_plugin
class FairShare(Plugin):
    name = "fairshare"
    ssn: Session
    capacity: Resources
    limit: dict[str, float]
    slices: dict[str, float]
    tenant_slices: dict[tuple[str, str], float]
    allocations: dict[str, tuple[int, float, float]]  # queue -> (its allocated_version, units held, over its slice)
    tenant_units: dict[tuple[str, str], tuple[int, float]]  # (leaf, tenant) -> (its tenant_version, units)
    queue_keys: dict[str, tuple[int, tuple[float, ...]]]  # queue -> (the root's allocated_version, its order)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weights = arguments.quantities("weights") or {"cpu": 1.0}
        self.dominant = arguments.flag("dominantShare", False)

    def hooks(self) -> dict[str, Fn]:
        return {
            "queue_order": self.queue_order,
            "queue_share": self.share,
            "tenant_order": self.tenant_order,
            "allocatable": self.allocatable,
            "tenant_held_back": self.tenant_held_back,
            "reclaimable": self.reclaimable,
        }

    def units(self, r: Resources) -> float:
        return res.dominant_share(r, self.capacity) if self.dominant else res.units(r, self.weights)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.capacity = ssn.capacity
        units = self.units
        usage = ssn.usage
        queues = {q: info for q, info in ssn.queues.items() if q != ROOT}
        eup = {
            q: effective_priority(usage.queue_rup.get(q, RUP_FLOOR), info.priority_factor, info.weight)
            for q, info in queues.items()
        }
        self.limit = limit = {}
        claims = {}
        for q, info in queues.items():
            cap = units(info.cap) if info.cap is not None else INF
            if not info.accept_surplus:
                cap = min(cap, units(info.guarantee))
            limit[q] = cap
            claims[q] = Claim(
                1.0 / eup[q],
                {UNIT: units(info.guarantee)},
                None if cap == INF else {UNIT: cap},
                True,
                {UNIT: units(ssn.requested.get(q, {}))},
            )
        slices = {
            q: s.get(UNIT, 0.0) for q, s in divide_tree({UNIT: units(self.capacity)}, claims, ssn.children).items()
        }
        tenant_slices: dict[tuple[str, str], float] = {}
        by_leaf: dict[str, list[str]] = {}
        for queue, tenant in ssn.tenant_requested:
            by_leaf.setdefault(queue, []).append(tenant)
        for leaf, tenants in by_leaf.items():
            spun = pie_spin(
                slices.get(leaf, 0.0),
                {t: units(ssn.tenant_requested[(leaf, t)]) for t in tenants},
                {
                    t: effective_priority(usage.tenant_rup.get(t, RUP_FLOOR), usage.tenant_factor.get(t, 1.0))
                    for t in tenants
                },
            )
            for t, got in spun.items():
                tenant_slices[(leaf, t)] = got
        self.slices = slices
        self.tenant_slices = tenant_slices
        self.allocations = {}
        self.tenant_units = {}
        self.queue_keys = {}

    def limit_kind(self, queue: str) -> str:
        """What a queue's hard limit is, in the words its queue config uses."""
        info = self.ssn.queues[queue]
        if not info.accept_surplus and (info.cap is None or self.units(info.guarantee) < self.units(info.cap)):
            return "guarantee (it accepts no surplus)"
        return "cap"

    def held(self, queue: str) -> float:
        return self._allocation(queue)[1]

    def share(self, queue: str) -> float:
        """A queue's usage over its slice; an allocation elsewhere in the tree leaves it as it was."""
        return self._allocation(queue)[2]

    def _allocation(self, queue: str) -> tuple[int, float, float]:
        """(allocated_version, allocation in units, units over slice) of a queue, worked out again only
        after its allocation changed (ordering asks often)."""
        version = self.ssn.allocated_version.get(queue, 0)
        known = self.allocations.get(queue)
        if known is None or known[0] != version:
            held = self.units(self.ssn.allocated[queue])
            known = self.allocations[queue] = (version, held, ratio(held, self.slices.get(queue, 0.0)))
        return known

    def tenant_held(self, queue: str, tenant: str) -> float:
        """A tenant's allocation in units, cached until its own allocation moves (ordering asks often)."""
        key = (queue, tenant)
        version = self.ssn.tenant_version.get(key, 0)
        known = self.tenant_units.get(key)
        if known is None or known[0] != version:
            known = self.tenant_units[key] = (version, self.units(self.ssn.tenant_allocated.get(key, {})))
        return known[1]

    def queue_order(self, queue: str) -> tuple[float, ...]:
        """Asked on every pop; the shares in it change only with an allocation, which moves the root's
        allocated_version, so the key is worked out again only then."""
        version = self.ssn.allocated_version.get(ROOT, 0)
        known = self.queue_keys.get(queue)
        if known is None or known[0] != version:
            known = self.queue_keys[queue] = (version, self.ssn.tree_key(queue, self.share))
        return known[1]

    def tenant_order(self, queue: str, tenant: str) -> float:
        return ratio(self.tenant_held(queue, tenant), self.tenant_slices.get((queue, tenant), 0.0))

    def allocatable(self, task: TaskInfo, job: JobInfo) -> str | None:
        ssn, units, limit = self.ssn, self.units, self.limit
        need: float | None = None  # worked out only against a cap: nothing exceeds an infinite one
        placing = 0.0
        if ssn.pending_count(job) < len(job.tasks):  # else nothing of it is placed: no task to sum
            placing = units(res.total(t.resources for t in job.tasks if t.status in PLACING))
        # Caps are hard. A fair-share slice holds a queue (or tenant) back only once it has reached
        # it: one that is below its slice may take a job that overshoots, as HTCondor's negotiator
        # does, so a job larger than the rest of the slice is limited by capacity (and can reserve)
        # instead of waiting on fair share for ever.
        for q in ssn.ancestry(job.queue):
            before = self.held(q) - placing  # before this job: a gang is judged as a whole
            if limit[q] != INF:
                need = units(task.resources) if need is None else need
                if before + placing + need > limit[q] + EPS:
                    return f"{CAP}: queue {q} would exceed its {self.limit_kind(q)} ({format_number(limit[q])} units)"
            if (veto := self._queue_at_slice(q, before)) is not None:
                return veto
        return self._tenant_at_slice(job.queue, job.tenant, self.tenant_held(job.queue, job.tenant) - placing)

    def tenant_held_back(self, queue: str, tenant: str) -> str | None:
        """HTCondor's submitter limit: once the tenant, or a queue it is under, holds its slice, no job
        of it with nothing placed yet may start in this pass, whatever its size, because the slice is
        checked against what is held before the job. (A cap's check depends on the job's size: it stays
        with ``allocatable``.)"""
        for q in self.ssn.ancestry(queue):
            if (veto := self._queue_at_slice(q, self.held(q))) is not None:
                return veto
        return self._tenant_at_slice(queue, tenant, self.tenant_held(queue, tenant))

    def _queue_at_slice(self, queue: str, before: float) -> str | None:
        """A slice holds its queue back only once reached, and only in the first pass (not ``surplus``)."""
        slice_ = self.slices.get(queue, 0.0)
        if self.ssn.surplus or before < slice_ - EPS:
            return None
        return f"{FAIR_SHARE}: queue {queue} holds its fair share ({format_number(slice_)} units)"

    def _tenant_at_slice(self, queue: str, tenant: str, before: float) -> str | None:
        if self.ssn.surplus or before < self.tenant_slices.get((queue, tenant), 0.0) - EPS:
            return None
        return f"{FAIR_SHARE}: tenant {tenant} holds its fair share of {queue}"

    def reclaimable(self, task: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        """The victims whose taking leaves every queue of theirs, below the queue they share with the
        reclaimer, at or above its slice: only what a queue borrowed past its fair share goes back."""
        ssn, units, slices = self.ssn, self.units, self.slices
        shared = set(ssn.ancestry(ssn.jobs[task.job].queue))
        left: dict[str, float] = {}
        allowed = []
        for v in victims:
            path = [q for q in ssn.ancestry(ssn.jobs[v.job].queue) if q not in shared]
            freed = units(v.resources)
            after = {q: left.get(q, self.held(q)) - freed for q in path}
            if all(after[q] >= slices.get(q, 0.0) - EPS for q in path):
                left.update(after)
                allowed.append(v)
        return allowed
