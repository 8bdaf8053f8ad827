"""Job records in the store: bulk writes, CAS state transitions, index maintenance (the API's atomic
submit is ``federation.submits``).

Every state change rewrites the record and moves its ``view/<state>/<queue>/<id>`` index entry and that
entry's twin in its tenant's index (``index_ops``, the one place both are named) in one txn guarded by
the record's ``mod_revision``, so two writers can never both win and the index never disagrees with the
record.
"""

from __future__ import annotations

import asyncio
import bisect
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pydantic_core
import structlog

from federation import keys
from federation.ids import new_job_id
from federation.lifecycle import (
    Event,
    JobEvent,
    Outcome,
    Requeued,
    RunStarted,
    RunStopped,
    StopOrder,
    carry_out,
    submitted,
    transition,
)
from federation.models import JobManifest, JobRecord, JobSpecBody, JobState
from federation.store import Compare, Op, RequestTooLarge, Store, put_many
from federation.store.bulk import batches

log = structlog.get_logger(__name__)


class Conflict(Exception):
    """The record changed since it was read; re-read and decide again."""


class NotFound(KeyError):
    pass


@dataclass(frozen=True)
class StoredJob:
    record: JobRecord
    revision: int


def expand(manifest: JobManifest, tenant: str, now: float) -> list[JobRecord]:
    """One record per job, array jobs expanded into ``<id>-<index>`` elements, each keeping its array's
    spec (``parallelism``: the throttle the scheduler holds the elements to).

    Validated, which costs less than ``model_construct`` (pure Python, slow at filling defaults): the
    spec and event, already models, are taken as they are, so the manifest is not validated twice.
    """
    spec = manifest.spec
    base_id = new_job_id(now)
    history = [submitted(now)]
    name, labels = manifest.metadata.name, manifest.metadata.labels

    def record(job_id: str, array_id: str = "", array_index: int | None = None) -> JobRecord:
        return job_record(
            job_id, name, tenant, spec, now, history, labels=labels, array_id=array_id, array_index=array_index
        )

    if spec.array is None:
        return [record(base_id)]
    return [record(f"{base_id}-{index}", base_id, index) for index in range(spec.array.count)]


def job_record(
    job_id: str, name: str, tenant: str, spec: JobSpecBody, now: float, history: list[JobEvent], **fields: Any
) -> JobRecord:
    """A new job's record as it enters the queue (``fedq simulate``'s jobs too): Pending since ``now``,
    its history the lifecycle's ``submitted`` entry."""
    return JobRecord(
        id=job_id,
        name=name,
        tenant=tenant,
        queue=spec.queue,
        priority=spec.priority,
        spec=spec,
        submit_time=now,
        events=list(history),
        **fields,
    )


def _index_value(record: JobRecord, raw: bytes) -> bytes:
    """The list view, with the job's tasks and its record's size, so tenant quotas are summed from
    the index alone (``federation.quotas``)."""
    view = {**record.summary(), "tasks": record.spec.total_replicas, "bytes": len(raw)}
    return pydantic_core.to_json(view)  # compact JSON, about 4x faster than the json module


def index_ops(state: str, queue: str, tenant: str, job_id: str, value: bytes | None = None) -> list[Op]:
    """Put (``value``) or delete (None) a job's index entry and its twin in its tenant's index: every
    write of the index goes through here, so the two never disagree."""
    key = keys.job_index(state, queue, job_id)
    both = (key, keys.tenant_index(tenant, key))
    return [Op.delete(each) if value is None else Op.put(each, value) for each in both]


def write_ops(record: JobRecord, raw: bytes | None = None) -> list[Op]:
    """The record's put and its index entries'; ``raw``: the record's bytes when they are at hand."""
    raw = record.to_bytes() if raw is None else raw
    value = _index_value(record, raw)
    return [
        Op.put(keys.job(record.id), raw),
        *index_ops(record.state.value, record.queue, record.tenant, record.id, value),
    ]


@dataclass(frozen=True)
class Change:
    """A prepared CAS write: commit ``ops`` only if ``guard`` holds (several may share one txn)."""

    record: JobRecord
    guard: Compare
    ops: list[Op]

    @property
    def raw(self) -> bytes:
        """The record's bytes as written (``write_ops`` puts the record first): no second serialisation."""
        return self.ops[0].value


class _Keys:
    """A ``Carrier`` that writes the orders for an agent as keys of the job's txn, which the report
    handler reads into the cluster's reply. Usage is counted from the landed record by the same rule
    that made the effect (``lifecycle.usage``, so it can be replayed from the store's history), and a
    requeued job reaches the scheduler through its watch: neither is a key."""

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops

    def assign(self, cluster: str, record: JobRecord) -> None:
        self.ops.append(Op.put(keys.assignment(cluster, record.id), b""))

    def unassign(self, cluster: str, record: JobRecord) -> None:
        self.ops.append(Op.delete(keys.assignment(cluster, record.id)))

    def stop(self, cluster: str, record: JobRecord, order: StopOrder) -> None:
        body = {"epoch": order.epoch, "reason": order.reason, "requeue": order.requeue}
        self.ops.append(Op.put(keys.cancel(cluster, record.id), json.dumps(body).encode()))

    def drop_stop(self, cluster: str, record: JobRecord) -> None:
        self.ops.append(Op.delete(keys.cancel(cluster, record.id)))

    def usage(self, change: RunStarted | RunStopped) -> None:
        pass

    def requeued(self, record: JobRecord, effect: Requeued) -> None:
        pass


def change_of(stored: StoredJob, outcome: Outcome) -> Change:
    """The CAS change that carries a lifecycle outcome out: the new record, its index entry (moved
    when its state or queue moved) and the keys its effects name, guarded by the record's revision."""
    old, new = stored.record, outcome.record
    ops = write_ops(new)
    carry_out(outcome, _Keys(ops))
    if (old.state, old.queue, old.tenant) != (new.state, new.queue, new.tenant):
        ops += index_ops(old.state.value, old.queue, old.tenant, old.id)
    return Change(new, Compare.mod_revision(keys.job(old.id), "==", stored.revision), ops)


class FenceFailed(Exception):
    """A batched commit's fence no longer holds (another writer owns what it guarded)."""


class Guarded(Protocol):
    """A write that lands only if its guard holds: a job's ``Change``, or any other CAS write."""

    @property
    def guard(self) -> Compare: ...

    @property
    def ops(self) -> list[Op]: ...


W = TypeVar("W", bound=Guarded)


@dataclass(frozen=True)
class GuardedWrite:
    """Any CAS write that is not a job's lifecycle ``Change``: ``ops`` if ``guard`` holds."""

    guard: Compare
    ops: list[Op]


async def commit_batched(
    store: Store,
    changes: Sequence[W],
    *,
    fence: Compare | None = None,
    on_landed: Callable[[list[W], int], None] | None = None,
    in_flight: int = 4,
) -> list[W]:
    """Commit CAS changes of distinct jobs in full txns, a few at once; returns those that landed.

    Txns are full by ops and by bytes (``batches``): large records make few changes a txn. A txn fails
    whole if one job moved since it was read, so a failed txn is retried change by change and the others
    still land; a change too large for any txn on its own lands never, and is logged, not raised, so one
    record cannot stop every other write. ``fence`` joins every txn; if it fails, ``FenceFailed`` is
    raised and nothing more is written. ``on_landed`` hears of each landed batch and its revision at once.
    """
    extra = [fence] if fence is not None else []
    # One compare a change and the fence: a txn of n changes (each of one op or more) has n + 1 compares.
    groups = batches(changes, lambda change: change.ops, store.max_txn_ops - 1)

    async def attempt(batch: list[W]) -> bool:
        guards = [*(change.guard for change in batch), *extra]
        try:
            result = await store.txn(guards, [op for c in batch for op in c.ops], [])
        except RequestTooLarge as exc:
            if len(batch) == 1:
                key = batch[0].guard.key
                log.error("a change too large for one etcd request was not written", key=key, error=str(exc))
            return False
        if result.succeeded and on_landed is not None:
            on_landed(batch, result.revision)
        return result.succeeded

    gate = asyncio.Semaphore(in_flight)

    async def send(batch: list[W]) -> list[W]:
        async with gate:
            if await attempt(batch):
                return batch
            if fence is not None and not (await store.txn([fence], [], [])).succeeded:
                raise FenceFailed("the fence no longer holds")
            return [change for change in batch if len(batch) > 1 and await attempt([change])]

    results = await asyncio.gather(*(send(batch) for batch in groups))
    return [change for landed in results for change in landed]


def index_ranges(state: str | None, queue: str | None) -> list[str]:
    """The index prefixes, in key order, that hold exactly the jobs of ``state`` and ``queue`` (None: any).

    A queue without a state is one range per state, so its listing never reads other queues' keys.
    """
    if state is not None:
        return [keys.index_prefix(state, queue)]
    if queue is None:
        return [keys.INDEX]
    return [keys.index_prefix(value, queue) for value in sorted(member.value for member in JobState)]


def index_stops(queues: Sequence[str]) -> list[str]:
    """Where a listing's reads may end (``JobRepository.summary_page``): at each state's range and at each
    of ``queues``' ranges within it."""
    return [keys.index_prefix(member.value, queue) for member in JobState for queue in (None, *queues)]


@dataclass(frozen=True)
class SummaryPage:
    """One page of list views; ``resume_after`` is the last index key read when keys may remain after it."""

    items: list[dict[str, Any]]
    resume_after: str | None


class JobRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(self, records: Sequence[JobRecord]) -> None:
        """Write new jobs in batched txns, a few in flight; if any batch fails, every one is removed."""
        items = [(op.key, op.value) for record in records for op in write_ops(record)]
        try:
            await put_many(self.store, items)
        except BaseException:
            await self._remove(records)
            raise

    async def _remove(self, records: Iterable[JobRecord]) -> None:
        ops = [
            op
            for record in records
            for op in (
                Op.delete(keys.job(record.id)),
                *index_ops(record.state.value, record.queue, record.tenant, record.id),
            )
        ]
        size = self.store.max_txn_ops  # deletes carry keys alone: the op limit is the only bound
        for start in range(0, len(ops), size):
            await self.store.txn([], ops[start : start + size], [])

    async def get(self, job_id: str) -> StoredJob:
        kv = await self.store.get(keys.job(job_id))
        if kv is None:
            raise NotFound(job_id)
        return StoredJob(JobRecord.from_bytes(kv.value), kv.mod_revision)

    async def summary_page(
        self,
        ranges: Sequence[str],
        *,
        after: str | None,
        tenant: str | None,
        limit: int,
        max_keys: int,
        stops: Sequence[str] = (),
        empty: Sequence[tuple[str, str]] = (),
        revision: int = 0,
    ) -> SummaryPage:
        """Up to ``limit`` list views of ``tenant`` (None: anyone's) from the index ``ranges`` (prefixes in
        key order, see ``index_ranges``), starting after the index key ``after``.

        A tenant's views are read from its own index, where every key is one of its jobs, so its page
        costs its own jobs, not everyone's; positions (``after``, ``resume_after``) stay ``view/`` keys
        either way. A page reads at most ``max_keys`` keys, and may then be short while keys remain
        (``resume_after`` says where to go on).

        A page is one view of the index: its reads all stand at one revision (``revision``, or its first
        read's), so a job that moves between states while the page is read is listed once, in the state
        it had then, never missed. A job moves back in key order (Pending to Dispatched to Admitted), so
        reads at the latest revision each could miss it. Pages after it are read at their own revisions.

        etcd 3.5 walks its in-memory index from a read's start to its end to count the keys there, limit
        or not (etcd-io/etcd#16510), so no read runs to the end of the index: each ends at the first of
        ``stops`` (index prefixes: a listing passes each state's and each leaf queue's, which a tree
        names) past its start, or where the last key's queue ends, and a read costs one queue's keys at
        most, not the store's. ``empty``: key intervals ``[low, high)``, in order, known to hold no key at
        ``revision`` (a replica's counts say so), which no read visits.
        """

        def into(key: str) -> str:
            return key if tenant is None else keys.tenant_index(tenant, key)

        def back(key: str) -> str:
            return key if tenant is None else keys.untenanted(tenant, key)

        ends = sorted(keys.prefix_end(into(prefix)) for prefix in stops)
        items: list[dict[str, Any]] = []
        read = 0
        last = None if after is None else into(after)
        for number, prefix in enumerate(ranges):
            first, end = into(prefix), keys.prefix_end(into(prefix))
            if last is not None and last >= end:
                continue
            start = first if last is None or last < first else last + "\0"
            while True:
                for low, high in empty:
                    start = high if low <= start < high else start
                if start >= end:
                    break
                if read >= max_keys:
                    assert last is not None  # a key was read
                    return SummaryPage(items, back(last))
                stop = bisect.bisect_right(ends, start)
                bound = end if stop == len(ends) else min(end, ends[stop])
                if last is not None and last >= first:  # an unnamed queue ends where its last key's does
                    queue_end = keys.prefix_end(last[: last.rindex("/") + 1])
                    bound = min(bound, queue_end) if queue_end > start else bound
                need = limit - len(items)
                want = min(need + 1, max_keys - read)  # one more than needed: is anything left after?
                got = await self.store.snapshot(start, limit=want, end=bound, revision=revision)
                revision, kvs = got.revision, got.kvs
                read += len(kvs)
                items += [json.loads(kv.value) for kv in kvs[:need]]
                if kvs:
                    last = kvs[:need][-1].key
                drained = len(kvs) < want  # nothing is left in [start, bound)
                if len(items) == limit:
                    final = drained and bound == end and number == len(ranges) - 1
                    return SummaryPage(items, None if final else back(kvs[need - 1].key))
                if not drained:
                    return SummaryPage(items, back(kvs[-1].key))  # at ``max_keys``
                if bound == end:
                    break
                start = bound
        return SummaryPage(items, None)

    async def apply(self, stored: StoredJob, event: Event, *, now: float) -> StoredJob:
        """CAS the job through one lifecycle event (unchanged if the event changes nothing); raises
        Conflict if anyone changed it since it was read, IllegalTransition if the event cannot happen."""
        outcome = transition(stored.record, event, now)
        if outcome is None:
            return stored
        change = change_of(stored, outcome)
        result = await self.store.txn([change.guard], change.ops, [])
        if not result.succeeded:
            raise Conflict(change.record.id)
        return StoredJob(change.record, result.revision)
