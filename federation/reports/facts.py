"""``JobFacts``: the part of a job record that reports read, kept instead of the record.

A report over 100,000 jobs holds every job at once: as parsed records (spec, env, history) about
420 MB on the replica for small one-task jobs (4.2 KB each), as facts about 36 MB (364 B each).
Records are read a page at a time and each page is turned into facts in a worker thread, so the
event loop never decodes more than one page's reply at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from federation import keys
from federation.models import JobRecord, JobState
from federation.store import KeyValue, Store

PAGE = 500
"""Records per read: a page's reply is decoded in a few milliseconds of the event loop."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class JobFacts:
    tenant: str
    queue: str
    cluster: str
    state: JobState
    resources: Mapping[str, float]  # all its tasks together
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
            record.spec.total_resources(),
            record.submit_time,
            record.start_time,
            record.end_time,
        )


def _facts(kvs: list[KeyValue]) -> list[JobFacts]:
    return [JobFacts.of(JobRecord.from_bytes(kv.value)) for kv in kvs]


async def load_job_facts(store: Store) -> list[JobFacts]:
    """Every job's facts (``read_jobs``)."""
    return await read_jobs(store, _facts)


async def read_jobs(store: Store, convert: Callable[[list[KeyValue]], list[T]]) -> list[T]:
    """Every job record, read ``PAGE`` at a time and each page turned by ``convert`` in a worker thread
    into what the caller keeps. Pages are read at successive revisions, so a job that moves while the
    caller reads may be seen in its old or its new state, never twice."""
    out: list[T] = []
    start, end = keys.JOBS, keys.prefix_end(keys.JOBS)
    while True:
        kvs = (await store.snapshot(start, limit=PAGE, end=end)).kvs
        out.extend(await asyncio.to_thread(convert, kvs))
        if len(kvs) < PAGE:
            return out
        start = kvs[-1].key + "\0"
