"""Job event streams, driven by the store's watch (never a loop of reads): one job's history and then each
transition as it happens, or the changes of a filtered listing, one message per store revision. A
replica watches the job records and the job index once each, for all its streams (``federation.fanout``).

A message's ``id`` is its revision: a client that resumes after it (``since``) gets exactly what followed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from federation import keys
from federation.fanout import Hub
from federation.models import JobRecord
from federation.sse import Message
from federation.store import CompactedError, Store, WatchEvent

RETRY_AFTER = 5
"""Seconds a caller refused for the replica's stream limit is told to wait (``Retry-After``)."""


class TooManyWatches(Exception):
    """A caller already holds as many open streams as a tenant may on this replica, or the replica holds
    as many as it serves at all; ``everyone``: the latter (retry later or on another replica)."""

    def __init__(self, message: str, everyone: bool) -> None:
        super().__init__(message)
        self.everyone = everyone


class WatchLimiter:
    """Open streams on this replica: at most ``per_tenant`` for each caller, so one tenant cannot take
    them all, and at most ``total`` in all, so the replica's sockets and memory stay bounded whoever
    asks (each stream costs a connection and a queue; the store watches are shared)."""

    def __init__(self, per_tenant: int, total: int) -> None:
        self.per_tenant = per_tenant
        self.total = total
        self._open: Counter[str] = Counter()

    @property
    def held(self) -> int:
        return self._open.total()

    def take(self, who: str) -> Callable[[], None]:
        """One of ``who``'s slots (``TooManyWatches`` past a limit); what it returns gives it back."""
        if self._open[who] >= self.per_tenant:
            raise TooManyWatches(
                f"{who!r} has {self._open[who]} event streams open on this server, the most allowed "
                "(api.maxWatchesPerTenant): close one, or follow many jobs with one stream (GET /v1/jobs?watch=true)",
                everyone=False,
            )
        if self.held >= self.total:
            raise TooManyWatches(
                f"this server has {self.held} event streams open, the most it serves (api.maxStreams): "
                f"retry in {RETRY_AFTER}s (Retry-After), or on another replica",
                everyone=True,
            )
        self._open[who] += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._open[who] -= 1
                if not self._open[who]:
                    del self._open[who]

        return release


def _job_key_range(job_id: str) -> tuple[str, str]:
    """Exactly the job's key (an array's elements share its id as a prefix)."""
    key = keys.job(job_id)
    return key, key + "\0"


async def job_history(store: Store, job_id: str) -> tuple[JobRecord, int] | None:
    """The job's record and the revision it was read at (what its stream resumes after), or None."""
    start, end = _job_key_range(job_id)
    snapshot = await store.snapshot(start, end=end)
    if not snapshot.kvs:
        return None
    return JobRecord.from_bytes(snapshot.kvs[0].value), snapshot.revision


def job_message(record: JobRecord, revision: int, seen: int = 0) -> Message:
    """The job's summary and the entries of its history after the first ``seen``."""
    events = [event.model_dump(mode="json", by_alias=True) for event in record.events[seen:]]
    return Message("job", {"revision": revision, "job": record.summary(), "events": events}, revision)


@dataclass(frozen=True)
class IndexChange:
    """One change of the job index, parsed once for every listing stream (a delete whose last value etcd
    no longer holds, compacted, is left out: whose job it was is unknown)."""

    key: str
    type: str
    view: dict[str, Any]


ANY_TENANT = "*"
"""The index topic with every tenant's changes (an admin's listing); each tenant's are also its own topic."""


class Hubs:
    """The replica's two shared watches: job records (topic: the record's key) and the job index (topic:
    the tenant, so a change wakes only the streams that may show it)."""

    def __init__(self, store: Store) -> None:
        self.jobs: Hub[list[WatchEvent]] = Hub(store, keys.JOBS, _by_key)
        self.index: Hub[list[IndexChange]] = Hub(store, keys.INDEX, _index_changes)


def _by_key(batch: list[WatchEvent]) -> list[tuple[str, list[WatchEvent]]]:
    grouped: dict[str, list[WatchEvent]] = {}
    for event in batch:
        grouped.setdefault(event.key, []).append(event)
    return list(grouped.items())


def _index_changes(batch: list[WatchEvent]) -> list[tuple[str, list[IndexChange]]]:
    changes = [IndexChange(e.key, e.type, json.loads(e.kv.value)) for e in batch if e.kv is not None]
    by_tenant: dict[str, list[IndexChange]] = {}
    for change in changes:
        by_tenant.setdefault(change.view["tenant"], []).append(change)
    return [(ANY_TENANT, changes), *by_tenant.items()]


async def job_messages(hubs: Hubs, job_id: str, after: int, idle: float) -> AsyncIterator[Message | None]:
    """A message for each change of the job's history after revision ``after`` (None after ``idle``
    seconds without one: a keepalive is due); a ``removed`` message ends it when the record goes."""
    feed = hubs.jobs.subscribe(keys.job(job_id), after)
    try:
        async for got in feed.items(idle):
            if got is None:
                yield None
                continue
            for event in got[1]:
                if event.type == "delete" or event.kv is None:
                    yield Message("removed", {"revision": event.revision, "id": job_id}, event.revision)
                    return
                if event.prev is None and event.kv.version > 1:
                    raise CompactedError(event.revision)  # etcd no longer has the version before: no diff
                seen = 0 if event.prev is None else len(json.loads(event.prev.value).get("events", []))
                record = JobRecord.from_bytes(event.kv.value)
                if len(record.events) > seen:
                    yield job_message(record, event.revision, seen)
    finally:
        feed.close()


@dataclass(frozen=True)
class Listing:
    """The list API's filters (None: any); a tenant's stream always names its tenant."""

    state: str | None
    queue: str | None
    tenant: str | None

    @property
    def prefix(self) -> str:
        """The index keys of the listing: a state's (and the queue's subtree's: its name as a key prefix);
        ``matches`` drops the queues that only share the name's start."""
        return keys.index_prefix(self.state) + (self.queue or "") if self.state is not None else keys.INDEX

    def matches(self, view: dict[str, Any]) -> bool:
        """The queue filter names a subtree: the queue itself and every queue under it."""
        queue = view["queue"]
        return (self.tenant is None or view["tenant"] == self.tenant) and (
            self.queue is None or queue == self.queue or queue.startswith(f"{self.queue}.")
        )

    def changes(self, batch: list[IndexChange]) -> list[dict[str, Any]]:
        """One revision's index changes in this listing: ``put`` (a job entered it or changed in it) and
        ``delete`` (it left it: another state, or its record removed). A job's move within the listing is
        one ``put``, though its old index entry went in the same revision."""
        puts: dict[str, dict[str, Any]] = {}
        deletes: dict[str, dict[str, Any]] = {}
        prefix = self.prefix
        for change in batch:
            view = change.view
            if change.key.startswith(prefix) and self.matches(view):
                (puts if change.type == "put" else deletes)[view["id"]] = view
        left = [{"type": "delete", "job": view} for job_id, view in deletes.items() if job_id not in puts]
        return [*({"type": "put", "job": view} for view in puts.values()), *left]


def start_message(revision: int) -> Message:
    return Message("start", {"revision": revision}, revision)


async def listing_messages(hubs: Hubs, listing: Listing, after: int, idle: float) -> AsyncIterator[Message | None]:
    """A message for each revision after ``after`` that changed the listing (None after ``idle`` seconds
    without one: a keepalive is due)."""
    feed = hubs.index.subscribe(listing.tenant or ANY_TENANT, after)
    try:
        async for got in feed.items(idle):
            if got is None:
                yield None
                continue
            revision, batch = got
            changes = listing.changes(batch)
            if changes:
                yield Message("jobs", {"revision": revision, "changes": changes}, revision)
    finally:
        feed.close()
