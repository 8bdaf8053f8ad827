"""People's actions on jobs, one or many at once (hold, release, requeue, cancel): each job moves by one
lifecycle event, the changes committed in batched CAS txns; a job that moved meanwhile is read again
and decided again.

Which jobs: ids, an array's elements (its records under ``jobs/<base>-``), or a listing's filters
(state, queue, tenant), read a page at a time so a bulk action over a deep queue never holds it all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from federation import keys
from federation.jobs import JobRepository, NotFound, StoredJob, change_of, commit_batched, index_ranges
from federation.lifecycle import Event, IllegalTransition, transition
from federation.models import JobRecord

PAGE = 500
ROUNDS = 5  # reads of a job that keeps changing under the action before it is given up on
READS_IN_FLIGHT = 16


@dataclass
class Tally:
    """What an action did: jobs changed, already as asked (unchanged), and refused with why."""

    matched: int = 0
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


Decide = Callable[[JobRecord], Event]
"""The event for a job, from its record as last read (an update's spec is rebuilt on each read)."""


async def act(jobs: JobRepository, selected: Sequence[StoredJob], decide: Decide, now: float, tally: Tally) -> None:
    """Move each selected job by the event ``decide`` gives it and count what happened in ``tally``."""
    tally.matched += len(selected)
    todo = list(selected)
    for _ in range(ROUNDS):
        changes = []
        for stored in todo:
            job_id = stored.record.id
            try:
                outcome = transition(stored.record, decide(stored.record), now)
            except IllegalTransition as exc:
                tally.refused[job_id] = str(exc)
                continue
            if outcome is None:
                tally.unchanged.append(job_id)
            else:
                changes.append(change_of(stored, outcome))
        landed = {change.record.id for change in await commit_batched(jobs.store, changes)}
        tally.changed += [change.record.id for change in changes if change.record.id in landed]
        moved = [change.record.id for change in changes if change.record.id not in landed]
        todo = [stored for stored in await read_jobs(jobs, moved, missing_ok=True) if stored is not None]
        tally.refused.update((job_id, "removed meanwhile") for job_id in set(moved) - {s.record.id for s in todo})
        if not todo:
            return
    tally.refused.update((stored.record.id, "kept changing; try again") for stored in todo)


async def read_jobs(jobs: JobRepository, ids: Sequence[str], *, missing_ok: bool = False) -> list[StoredJob | None]:
    """The jobs' records, a few reads at once; raises NotFound for a missing one unless ``missing_ok``."""
    gate = asyncio.Semaphore(READS_IN_FLIGHT)

    async def one(job_id: str) -> StoredJob | None:
        async with gate:
            try:
                return await jobs.get(job_id)
            except NotFound:
                if missing_ok:
                    return None
                raise

    return list(await asyncio.gather(*(one(job_id) for job_id in ids)))


async def array_pages(jobs: JobRepository, base: str) -> AsyncIterator[list[StoredJob]]:
    """The elements of array ``base``, a page of records at a time (array ids are ``<base>-<index>``)."""
    prefix = keys.job(f"{base}-")
    start, end = prefix, keys.prefix_end(prefix)
    while True:
        kvs = (await jobs.store.snapshot(start, limit=PAGE, end=end)).kvs
        elements = [StoredJob(JobRecord.from_bytes(kv.value), kv.mod_revision) for kv in kvs]
        elements = [stored for stored in elements if stored.record.array_id == base]  # not another id's prefix
        if elements:
            yield elements
        if len(kvs) < PAGE:
            return
        start = kvs[-1].key + "\0"


async def listed_pages(
    jobs: JobRepository, state: str | None, queue: str | None, tenant: str | None, max_keys: int
) -> AsyncIterator[list[StoredJob]]:
    """The jobs a listing with these filters shows, a page at a time (from the index, then their records)."""
    after: str | None = None
    ranges = index_ranges(state, queue)
    while True:
        page = await jobs.summary_page(ranges, after=after, tenant=tenant, limit=PAGE, max_keys=max_keys)
        found = await read_jobs(jobs, [item["id"] for item in page.items], missing_ok=True)
        selected = [stored for stored in found if stored is not None]
        if selected:
            yield selected
        if page.resume_after is None:
            return
        after = page.resume_after
