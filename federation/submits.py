"""Atomic, idempotent submits: a request's new jobs land all or none, however many txns they take, and
a retried request (the same ``Idempotency-Key``) answers the first one's result and writes nothing new.

A request that fits one txn (fewer than ``max_txn_ops`` ops, ``MAX_BATCH_BYTES``) is that one txn, its
answer beside it for a keyed one. A larger one goes through a redo log, not a pending marker on the
records, so nothing that reads jobs changes. The records are
first staged where no reader looks (``staged/<request>/<n>``) under an open journal
(``submits/open/<request>``, state ``staged``). One txn then commits the request: the journal turns
``committed`` with its answer, guarded by its own revision. Until that txn, nothing of the request is
visible, and a failure leaves only staged chunks, which the sweep deletes once ``STALE_AFTER`` old;
after it, the request is accepted, and its jobs are published into ``jobs/`` and the index, each put
guarded by the job being absent, so publishing again after a crash writes each job once. Then the
journal closes: its chunks and the open journal go, and for a keyed request ``submits/done/<request>``
keeps the answer for ``IDEMPOTENCY_TTL`` on a lease, so etcd removes it.

A request is answered once its jobs are published: a store failure while publishing is retried for up
to ``PUBLISH_WAIT`` (a 201 names only jobs every reader sees). Past that, or if the replica dies after
the commit, the request is finished by its own retry, by the next submit's sweep on any replica, and
by the leader's upkeep, which sweeps every ``FINISH_EVERY``, on its own, within seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from federation import keys
from federation.jobs import write_ops
from federation.models import JobRecord
from federation.store import Compare, KeyValue, Op, Store, StoreError, StoreUnavailable, get_many, put_many
from federation.store.base import payload_bytes
from federation.store.bulk import MAX_BATCH_BYTES, batches
from policies.clock import Clock

IDEMPOTENCY_TTL = 24 * 3600.0
"""How long a keyed request's answer is kept for its retries."""
STALE_AFTER = 120.0
"""A staged request this old was abandoned by its server (no request takes so long): the sweep drops it."""
SWEEP_EVERY = 30.0
"""How often a replica's submits first sweep abandoned and unfinished requests (at once after a failure)."""
FINISH_EVERY = 2.0
"""How often the leader sweeps: what a failure or a replica's death left unpublished is published by
the federation itself within seconds, not at the next submit."""
PUBLISH_WAIT = 15.0
"""Seconds an accepted request retries its publish through store failures before it is answered 503
(under a client's usual 30 s timeout; etcd elects a leader or restarts well within it)."""
_RETRY_PAUSES = (0.1, 0.2, 0.5, 1.0)
_CHUNK_BYTES = 512 * 1024
MAX_KEY_LENGTH = 255


class KeyReused(Exception):
    """The Idempotency-Key was used for a different request."""


class InProgress(Exception):
    """A request with this Idempotency-Key is being handled now."""


class OutcomeUnknown(StoreUnavailable):
    """The commit was sent but its answer lost: the request may yet be accepted (a retry with its key tells)."""


class Unpublished(StoreUnavailable):
    """The request is accepted but the store failed while its jobs were published, for ``PUBLISH_WAIT``:
    the federation publishes them once the store is back (a retry with its key answers its ids then)."""


class GuardFailed(Exception):
    """What the request was checked against (the queue tree) changed before its commit: nothing was
    written; check it again against the new one."""


@dataclass(frozen=True)
class Request:
    """One submit: its id in the store, whether a client key names it, and its fingerprint."""

    id: str
    keyed: bool
    fingerprint: str

    @staticmethod
    def of(owner: str, key: str | None, document: Any, params: dict[str, Any]) -> Request:
        body = json.dumps([owner, params, document], sort_keys=True, separators=(",", ":")).encode()
        fingerprint = hashlib.sha256(body).hexdigest()
        if key is None:
            return Request(secrets.token_hex(16), False, fingerprint)
        return Request(hashlib.sha256(f"{owner}\0{key}".encode()).hexdigest()[:32], True, fingerprint)


class Submits:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._swept = float("-inf")
        self._committed: set[tuple[str, int]] = set()  # (journal, revision) found committed by the last sweep

    async def replay(self, request: Request) -> dict[str, Any] | None:
        """The first answer to a keyed request seen before (finishing its commit if it was cut short);
        None for a request new to the store. A retry takes over an attempt that has not committed: that
        one's commit then fails on its journal's revision, so one of the two lands, never both."""
        if not request.keyed:
            return None
        for _ in range(3):
            done, opened = await get_many(self._store, [keys.done_submit(request.id), keys.open_submit(request.id)])
            journal = done or opened
            if journal is None:
                return None
            body = json.loads(journal.value)
            if body["fingerprint"] != request.fingerprint:
                raise KeyReused(request.id)
            if done is not None:
                return dict(body["answer"])
            if body["state"] == "committed":
                await self._published(request.id, journal)
                return dict(body["answer"])
            if await self._forget(request.id, journal.mod_revision):
                return None
        raise InProgress(request.id)

    async def submit(
        self, request: Request, records: Sequence[JobRecord], answer: dict[str, Any], guard: Compare | None = None
    ) -> None:
        """Write ``records`` all or none; raises having made nothing visible, except ``OutcomeUnknown``
        (the answer of the txn that makes them visible was lost) and ``Unpublished``. A request that
        fits one txn is that txn; a larger one is staged, committed and published. ``guard``: what the
        request was checked against holds in the txn that makes it visible, or ``GuardFailed``."""
        await self.sweep()
        items = [(record, record.to_bytes()) for record in records]
        ops = [op for record, raw in items for op in write_ops(record, raw)]
        if len(ops) < self._store.max_txn_ops and payload_bytes(ops) <= MAX_BATCH_BYTES:
            await self._at_once(request, ops, answer, guard)
            return
        journal = {
            "fingerprint": request.fingerprint,
            "created": self._clock.now(),
            "keyed": request.keyed,
            "answer": answer,
        }
        staged = json.dumps({**journal, "state": "staged"}).encode()
        opened = keys.open_submit(request.id)
        start = await self._store.txn(
            [Compare.missing(opened), Compare.missing(keys.done_submit(request.id))], [Op.put(opened, staged)], []
        )
        if not start.succeeded:
            raise InProgress(request.id)
        try:
            await put_many(self._store, _stage(request.id, [raw for _, raw in items]))
        except BaseException:
            await self._forget(request.id, start.revision)
            raise
        committed = json.dumps({**journal, "state": "committed"}).encode()
        try:
            commit = await self._store.txn(
                [Compare.mod_revision(opened, "==", start.revision), *([guard] if guard else [])],
                [Op.put(opened, committed)],
                [],
            )
        except StoreUnavailable as exc:
            self._swept = float("-inf")
            raise OutcomeUnknown(str(exc)) from exc
        if not commit.succeeded and guard is not None and not await self._holds(guard):
            await self._forget(request.id, start.revision)
            raise GuardFailed(guard.key)
        if not commit.succeeded:
            raise StoreUnavailable("the submit took too long and was dropped; nothing was written, try again")
        await self._published(request.id, KeyValue(opened, committed, commit.revision, commit.revision, 2), items)

    async def _at_once(self, request: Request, ops: list[Op], answer: dict[str, Any], guard: Compare | None) -> None:
        """One txn: the jobs, and for a keyed request its answer, guarded by no other attempt holding the key."""
        compares: list[Compare] = [guard] if guard else []
        if request.keyed:
            opened, done = keys.open_submit(request.id), keys.done_submit(request.id)
            compares += [Compare.missing(opened), Compare.missing(done)]
            lease = await self._store.grant(IDEMPOTENCY_TTL)
            body = {"fingerprint": request.fingerprint, "answer": answer}
            ops = [*ops, Op.put(done, json.dumps(body).encode(), lease)]
        try:
            result = await self._store.txn(compares, ops, [])
        except StoreUnavailable as exc:
            raise OutcomeUnknown(str(exc)) from exc
        if not result.succeeded and guard is not None and not await self._holds(guard):
            raise GuardFailed(guard.key)
        if not result.succeeded:
            raise InProgress(request.id)

    async def _holds(self, guard: Compare) -> bool:
        """Whether a failed txn's ``guard`` (a key's mod revision) still holds: if so, something else failed it."""
        return (await self._store.txn([guard], [], [])).succeeded

    async def sweep(self, every: float = SWEEP_EVERY, *, patient: bool = False) -> None:
        """Drop abandoned staged requests and finish committed ones, at most every ``every``.
        ``patient`` (the leader's): finish only those found committed, unchanged, by the previous sweep
        too, so a request its own replica is publishing now is not published twice at once."""
        now = self._clock.now()
        if now - self._swept < every:
            return
        self._swept = now
        committed: set[tuple[str, int]] = set()
        for journal in await self._store.range(keys.OPEN_SUBMITS):
            body = json.loads(journal.value)
            request_id = journal.key.rsplit("/", 1)[1]
            if body["state"] == "committed":
                committed.add((journal.key, journal.mod_revision))
                if not patient or (journal.key, journal.mod_revision) in self._committed:
                    await self._finish(request_id, journal)
            elif body["created"] <= now - STALE_AFTER:
                await self._forget(request_id, journal.mod_revision)
        self._committed = committed

    async def _published(
        self, request_id: str, journal: KeyValue, items: Sequence[tuple[JobRecord, bytes]] | None = None
    ) -> None:
        """Finish a committed request before it is answered, retrying through store failures for up to
        ``PUBLISH_WAIT`` from the first; past it, ``Unpublished`` (the sweeps finish it). A publish that
        is slow but not failing (a large request on a busy store) is waited for: each store call has its
        own timeout, which counts as a failure."""
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        for attempt in itertools.count():
            try:
                await self._finish(request_id, journal, items)
                return
            except StoreError as exc:
                failing_since = loop.time() if failing_since is None else failing_since
                if loop.time() - failing_since >= PUBLISH_WAIT:
                    self._swept = float("-inf")  # this replica's next submit sweeps too
                    raise Unpublished(str(exc)) from None
            await asyncio.sleep(_RETRY_PAUSES[min(attempt, len(_RETRY_PAUSES) - 1)])

    async def _finish(
        self, request_id: str, journal: KeyValue, items: Sequence[tuple[JobRecord, bytes]] | None = None
    ) -> None:
        """Publish a committed request's jobs (those not there yet) and close its journal; ``items``: the
        records with their bytes, read back from the staged chunks when not given."""
        if items is None:
            chunks = await self._store.range(keys.staged(request_id))
            items = [(JobRecord.from_bytes(line), line) for kv in chunks for line in kv.value.split(b"\n")]
        await _publish(self._store, items)
        body = json.loads(journal.value)
        ops = [Op.delete_prefix(keys.staged(request_id)), Op.delete(journal.key)]
        if body["keyed"]:
            lease = await self._store.grant(IDEMPOTENCY_TTL)
            done = {"fingerprint": body["fingerprint"], "answer": body["answer"]}
            ops.append(Op.put(keys.done_submit(request_id), json.dumps(done).encode(), lease))
        await self._store.txn([Compare.mod_revision(journal.key, "==", journal.mod_revision)], ops, [])

    async def _forget(self, request_id: str, revision: int) -> bool:
        """Drop a request that never committed, its chunks and its journal, unless its journal moved on
        from ``revision``; False if it did (or the store failed: the sweep drops it once stale)."""
        opened = keys.open_submit(request_id)
        ops = [Op.delete_prefix(keys.staged(request_id)), Op.delete(opened)]
        try:
            return (await self._store.txn([Compare.mod_revision(opened, "==", revision)], ops, [])).succeeded
        except StoreError:
            self._swept = float("-inf")
            return False


def _stage(request_id: str, raws: Sequence[bytes]) -> list[tuple[str, bytes]]:
    """The records as chunks of lines of record JSON (which has no raw newline), about ``_CHUNK_BYTES`` each."""
    chunks: list[tuple[str, bytes]] = []
    lines: list[bytes] = []
    size = 0
    for raw in raws:
        if lines and size + len(raw) > _CHUNK_BYTES:
            chunks.append((f"{keys.staged(request_id)}{len(chunks):06d}", b"\n".join(lines)))
            lines, size = [], 0
        lines.append(raw)
        size += len(raw) + 1
    if lines:
        chunks.append((f"{keys.staged(request_id)}{len(chunks):06d}", b"\n".join(lines)))
    return chunks


async def _publish(store: Store, items: Sequence[tuple[JobRecord, bytes]], in_flight: int = 4) -> None:
    """Write each record and its index entry unless the job is there already (published before)."""
    gate = asyncio.Semaphore(in_flight)

    async def send(batch: list[tuple[JobRecord, bytes]]) -> None:
        async with gate:
            guards = [Compare.missing(keys.job(record.id)) for record, _ in batch]
            ops = [op for record, raw in batch for op in write_ops(record, raw)]
            if (await store.txn(guards, ops, [])).succeeded:
                return
            found = await get_many(store, [keys.job(record.id) for record, _ in batch])
            for (record, raw), kv in zip(batch, found, strict=True):
                if kv is None:
                    await store.txn([Compare.missing(keys.job(record.id))], write_ops(record, raw), [])

    # A job's guard and its two ops: ``max_txn_ops`` ops are half as many jobs, as many guards.
    groups = batches(items, lambda item: write_ops(*item), store.max_txn_ops)
    sends = [asyncio.ensure_future(send(batch)) for batch in groups]
    try:
        await asyncio.gather(*sends)
    except BaseException:
        for sending in sends:
            sending.cancel()  # a failed publish ends whole before anyone publishes again
        await asyncio.gather(*sends, return_exceptions=True)
        raise
