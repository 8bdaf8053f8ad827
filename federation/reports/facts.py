"""``JobsRead``: what reports know of the jobs, read from the job index instead of the records.

A report needs, for each job that left the queue, its tenant, queue, cluster, state and times; for a
queued job only where it waits. So it reads the tenant index (``tenant-view/<tenant>/<state>/<queue>/
<id>``: the list view of every job, a few hundred bytes, plain JSON), parses the entries of jobs that
left the queue, and only counts the queued ones from their keys: at 1,000,000 pending jobs a report
holds a count per tenant and queue, not a million objects, and decodes no record (a record's pydantic
parse is several times a list view's JSON parse). The index is read in ``Store.pages``, at one
revision, each page turned into facts in a worker thread, so the event loop decodes one page at a time.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic_core

from federation import keys
from federation.models import JobRecord, JobState
from federation.store import KeyValue, Store

QUEUED = frozenset(state.value for state in JobState if state.queued)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class JobFacts:
    """A job that left the queue: running, on its way to a cluster, or ended."""

    tenant: str
    queue: str
    cluster: str
    state: JobState
    submit_time: float
    start_time: float | None
    end_time: float | None

    @staticmethod
    def of(record: JobRecord) -> JobFacts:
        return JobFacts(
            record.tenant,
            record.queue,
            record.cluster,
            record.state,
            record.submit_time,
            record.start_time,
            record.end_time,
        )

    @staticmethod
    def of_view(raw: bytes) -> JobFacts:
        """From a job's list view (``JobRecord.summary``, the index's value, as stored)."""
        view: dict[str, Any] = pydantic_core.from_json(raw)
        return JobFacts(
            view["tenant"],
            view["queue"],
            view["cluster"],
            JobState(view["state"]),
            view["submit_time"],
            view["start_time"],
            view["end_time"],
        )


@dataclass
class JobsRead:
    """Facts of every job that left the queue, and the queued jobs counted by tenant and queue."""

    facts: list[JobFacts] = field(default_factory=list)
    queued: Counter[tuple[str, str]] = field(default_factory=Counter)

    @staticmethod
    def of(records: Iterable[JobRecord]) -> JobsRead:
        read = JobsRead()
        for record in records:
            if not read._counted(record.tenant, record.queue, record.state.value):
                read.facts.append(JobFacts.of(record))
        return read

    def __len__(self) -> int:
        """The jobs read: those out of the queue and the queued ones counted."""
        return len(self.facts) + sum(self.queued.values())

    def tenants(self) -> set[str]:
        return {job.tenant for job in self.facts} | {tenant for tenant, _ in self.queued}

    def _counted(self, tenant: str, queue: str, state: str) -> bool:
        """Count a queued job (True); a job out of the queue needs its facts (False)."""
        if state not in QUEUED:
            return False
        self.queued[tenant, queue] += 1
        return True

    def _add_page(self, kvs: list[KeyValue]) -> None:
        for kv in kvs:
            tenant, state, queue = keys.tenant_index_parts(kv.key)
            if not self._counted(tenant, queue, state):
                self.facts.append(JobFacts.of_view(kv.value))


async def read_facts(store: Store) -> JobsRead:
    """Every job as a report sees it, from the tenant index at one revision."""
    read = JobsRead()
    async for page in store.pages(keys.TENANT_INDEX):
        await asyncio.to_thread(read._add_page, page.kvs)
    return read


async def read_jobs(store: Store, convert: Callable[[list[KeyValue]], list[T]]) -> list[T]:
    """Every job record, in ``Store.pages`` at one revision, each page turned by ``convert`` in a worker
    thread into what the caller keeps (the what-if export's pages: ``routes_history``)."""
    out: list[T] = []
    async for page in store.pages(keys.JOBS):
        out.extend(await asyncio.to_thread(convert, page.kvs))
    return out
