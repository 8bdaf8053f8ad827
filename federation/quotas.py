"""Whether the store may take a submit: the tenant's quota (``quotas:``) and the federation's store
budget (``store.budgetBytes``), checked before anything is written.

A tenant's usage is summed from its own job index (``tenant-view/<tenant>/<state>/<queue>/<id>``, whose
entries carry each job's tasks and record size) over its unfinished jobs in the queues it may use, so a
sum reads that tenant's jobs, not everyone's in those queues, by ``QuotaLedger``
off the submit path. Two submits checked at once may both pass: a tenant can overshoot by a request,
and by what other replicas accept before the next sum (``USAGE_FRESH_FOR``, ``SUM_SHARE``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import structlog

from federation import keys
from federation.config import Quota
from federation.lifecycle import JobState
from federation.models import JobRecord, QueueTree
from federation.store import KeyValue, Store, StoreFull
from policies.clock import Clock

log = structlog.get_logger(__name__)

USAGE_FRESH_FOR = 10.0
"""Seconds a tenant's summed usage serves its submits before it is summed again (in the background)."""
SUM_SHARE = 0.05
"""At most this share of the replica's time goes to summing one tenant in the background: a sum that
took 2 s (a tenant with 100,000 unfinished jobs) is redone after 40 s, not every ``USAGE_FRESH_FOR``."""
SIZE_FRESH_FOR = 2.0
"""Seconds a store size read stays good; bytes this replica writes meanwhile are added to it."""
UNFINISHED = tuple(state.value for state in JobState if not state.terminal)
SUM_PAGE = 500
"""Index entries a usage sum reads at once."""


@dataclass(frozen=True)
class Usage:
    jobs: int = 0
    tasks: int = 0
    bytes: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.jobs + other.jobs, self.tasks + other.tasks, self.bytes + other.bytes)


class OverQuota(Exception):
    """The submit would take the tenant over its quota; the message says which limit and by how much."""


def usage_of(records: Sequence[JobRecord], sizes: Sequence[int]) -> Usage:
    """What ``records`` would add (``sizes``: each record's bytes)."""
    return Usage(len(records), sum(record.spec.total_replicas for record in records), sum(sizes))


async def tenant_usage(store: Store, tree: QueueTree, tenant: str) -> Usage:
    """The tenant's unfinished jobs, their tasks and record bytes, from the index of its queues.

    Read a page of ``SUM_PAGE`` entries at a time, each summed as it comes: one large read would hold
    the API's event loop while its reply is decoded (about a second behind 20,000 jobs), and every other
    request on the replica would wait that long; a page holds it for a few milliseconds. The pages all
    stand at one revision: a job moves between states while they are read (Dispatched to Running is
    forward in key order, Pending to Dispatched back), and read each at the latest it would count twice,
    or not at all. The store keeps ``store.compactEvery`` (5 minutes) of history at least, far more than a
    sum takes."""
    queues = {node.path for node in tree.leaves() if tree.may_submit(tenant, node.path)}
    total = Usage()
    revision = 0  # every page at the first one's: a job that changes state meanwhile counts once
    # One range a state: the tenant's own index holds its jobs alone, so a range per state and queue
    # (1,200 reads with 200 leaves) only split the same keys; a job in a queue it may not use is skipped.
    for prefix in (keys.tenant_index(tenant, keys.index_prefix(state)) for state in UNFINISHED):
        start, end = prefix, keys.prefix_end(prefix)
        while True:
            read = await store.snapshot(start, limit=SUM_PAGE, end=end, revision=revision)
            revision, kvs = read.revision, read.kvs
            total = total + _sum([kv for kv in kvs if _queue_of(kv.key) in queues])
            if len(kvs) < SUM_PAGE:
                break
            start = kvs[-1].key + "\0"
    return total


def _queue_of(index_key: str) -> str:
    """The queue of an index key (``.../<state>/<queue>/<id>``; queue paths hold no slash)."""
    return index_key.rsplit("/", 2)[-2]


class QuotaLedger:
    """Each tenant's usage on this replica: summed from the index at most every ``USAGE_FRESH_FOR``
    seconds (longer for a tenant whose sum is slow: ``SUM_SHARE``), in the background once a first sum
    exists, plus what this replica accepted since that sum began. A submit waits on a sum only as a
    tenant's first on the replica or before it is refused, so many jobs cost a tenant's accepted submits
    nothing; other replicas' submits count from the next sum (a tenant may overshoot by what they accept
    in that time)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._accepted = 0  # how many submits this replica accepted: orders them against sums
        # tenant -> (when, after which submit, the sum, when it is due again)
        self._summed: dict[str, tuple[float, int, Usage, float]] = {}
        self._since: dict[str, list[tuple[int, Usage]]] = {}  # tenant -> its accepted submits, numbered
        self._refreshing: dict[str, asyncio.Task[None]] = {}

    async def usage(self, tree: QueueTree, tenant: str, *, fresh: bool = False) -> Usage:
        """``fresh``: sum now, as before a refusal, so jobs that ended since the last sum count no more."""
        now = self._clock.now()
        known = self._summed.get(tenant)
        if known is None or fresh:
            await self._sum(tree, tenant, now)
        elif now >= known[3] and tenant not in self._refreshing:
            task = asyncio.create_task(self._sum(tree, tenant, now))
            self._refreshing[tenant] = task
            task.add_done_callback(partial(self._refreshed, tenant))
        _, after, total, _ = self._summed[tenant]
        for number, added in self._since.get(tenant, []):
            if number > after:
                total = total + added
        return total

    def _refreshed(self, tenant: str, task: asyncio.Task[None]) -> None:
        self._refreshing.pop(tenant, None)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.warning("summing a tenant's quota usage failed; the last sum stands", tenant=tenant, error=str(error))

    async def check(self, tree: QueueTree, tenant: str, quota: Quota, adding: Usage) -> None:
        """Raise ``OverQuota`` if ``adding`` takes the tenant past ``quota``: against the kept sum first,
        and before a refusal against a fresh one (jobs that ended since count no more)."""
        try:
            check_quota(tenant, quota, await self.usage(tree, tenant), adding)
        except OverQuota:
            check_quota(tenant, quota, await self.usage(tree, tenant, fresh=True), adding)

    def accepted(self, tenant: str, added: Usage) -> None:
        self._accepted += 1
        self._since.setdefault(tenant, []).append((self._accepted, added))

    async def _sum(self, tree: QueueTree, tenant: str, now: float) -> None:
        after = self._accepted
        found = await tenant_usage(self._store, tree, tenant)
        took = self._clock.now() - now
        if after >= self._summed.get(tenant, (0.0, -1, Usage(), 0.0))[1]:
            self._summed[tenant] = (now, after, found, now + max(USAGE_FRESH_FOR, took / SUM_SHARE))
            self._since[tenant] = [(number, added) for number, added in self._since.get(tenant, []) if number > after]


def _sum(kvs: Sequence[KeyValue]) -> Usage:
    tasks = size = 0
    for kv in kvs:
        item = json.loads(kv.value)
        tasks += item.get("tasks", 1)  # entries written before quotas carry neither
        size += item.get("bytes", 0)
    return Usage(len(kvs), tasks, size)


def check_quota(tenant: str, quota: Quota, used: Usage, adding: Usage) -> None:
    """Raise ``OverQuota`` when ``used + adding`` passes any of the quota's limits."""
    total = used + adding
    for name, limit, have, asked in (
        ("jobs", quota.jobs, used.jobs, adding.jobs),
        ("tasks", quota.tasks, used.tasks, adding.tasks),
        ("bytes", quota.bytes, used.bytes, adding.bytes),
    ):
        if limit is not None and getattr(total, name) > limit:
            raise OverQuota(
                f"tenant {tenant!r} is over its quota of {limit} unfinished {name} (quotas.{name}): it has "
                f"{have} and this request adds {asked}; wait for jobs to end, cancel some, or ask an admin "
                "for a larger quota"
            )


class StoreBudget:
    """Refuses new work once the store's size reaches ``budget`` bytes, below etcd's own quota.

    The size is read at most every ``SIZE_FRESH_FOR`` seconds; what this replica accepted since is
    added to it, so a burst of submits between reads cannot run past the budget unseen."""

    def __init__(self, store: Store, clock: Clock, budget: int) -> None:
        self._store = store
        self._clock = clock
        self._budget = budget
        self._size = 0
        self._read_at = float("-inf")

    async def check(self, adding: int) -> None:
        """Raise ``StoreFull`` if ``adding`` bytes would take the store past its budget."""
        now = self._clock.now()
        if now - self._read_at >= SIZE_FRESH_FOR:
            self._size, self._read_at = await self._store.size(), now
        if self._size + adding > self._budget:
            raise StoreFull(
                f"store nearly full: {self._size} of its {self._budget} bytes budget (store.budgetBytes) used, "
                f"this request needs {adding} more; try again once finished jobs are removed (store.keepFinished) "
                "or an operator has compacted and defragmented etcd"
            )

    def wrote(self, size: int) -> None:
        self._size += size
