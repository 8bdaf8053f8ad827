"""``JobFacts``: the part of a job record that reports read, kept instead of the record.

A report over 100,000 jobs holds every job at once: as parsed records (spec, env, history) about
420 MB on the replica for small one-task jobs (4.2 KB each), as facts about 36 MB (364 B each).
Records are read a page at a time and each page is turned into facts in a worker thread, so the
event loop never decodes more than one page's reply at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from federation import keys
from federation.models import JobRecord, JobState
from federation.store import KeyValue, Store

PAGE = 500
"""Records per read: a page's reply is decoded in a few milliseconds of the event loop."""


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
    """Every job's facts, read ``PAGE`` records at a time. Pages are read at successive revisions, so
    a job that moves while the report reads may be counted in its old or its new state, never twice."""
    facts: list[JobFacts] = []
    start, end = keys.JOBS, keys.prefix_end(keys.JOBS)
    while True:
        kvs = (await store.snapshot(start, limit=PAGE, end=end)).kvs
        facts.extend(await asyncio.to_thread(_facts, kvs))
        if len(kvs) < PAGE:
            return facts
        start = kvs[-1].key + "\0"
