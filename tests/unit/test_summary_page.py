"""``JobRepository.summary_page`` against a plain filter of the whole index, for any index, filter,
page size and scan limit: following ``resume_after`` lists each matching job once, in key order."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from federation import keys
from federation.jobs import JobRepository, index_ops, index_ranges, index_stops
from federation.store import MemoryStore, Op, put_many

STATES = ["Pending", "Running", "Succeeded"]
QUEUES = ["a", "a.b", "b", "q"]
TENANTS = ["t1", "t2", "t3"]

jobs = st.lists(st.tuples(st.sampled_from(STATES), st.sampled_from(QUEUES), st.sampled_from(TENANTS)), max_size=60)


Filters = tuple[str | None, str | None, str | None]


async def walk(
    entries: list[tuple[str, str, str]], filters: Filters, limit: int, max_keys: int, known: list[str], skip: bool
) -> tuple[list[str], list[str], int]:
    """(every key listed, every key expected, pages taken) for a (state, queue, tenant) filter, reads
    stopping at the ranges of the ``known`` queues (a tree's leaves; jobs may sit in others), and
    with ``skip``, skipping the state and queue ranges that hold no job."""
    state, queue, tenant = filters
    store = MemoryStore()
    index: dict[str, dict[str, str]] = {}
    ops: list[Op] = []
    for number, (job_state, job_queue, job_tenant) in enumerate(entries):
        value = {"id": f"{number:04d}", "tenant": job_tenant}
        index[keys.job_index(job_state, job_queue, value["id"])] = value
        ops += index_ops(job_state, job_queue, job_tenant, value["id"], json.dumps(value).encode())
    await put_many(store, [(op.key, op.value) for op in ops])
    repository = JobRepository(store)
    held = {(job_state, job_queue) for job_state, job_queue, _ in entries}
    vacant = [keys.index_prefix(s, q) for s in STATES for q in QUEUES if (s, q) not in held]
    empty = sorted((prefix, keys.prefix_end(prefix)) for prefix in vacant) if skip and tenant is None else []
    ranges = index_ranges(state, queue)
    expected = sorted(
        key
        for key, value in index.items()
        if any(key.startswith(prefix) for prefix in ranges) and tenant in (None, value["tenant"])
    )
    ids = {value["id"]: key for key, value in index.items()}
    listed: list[str] = []
    after = None
    pages = 0
    while True:
        page = await repository.summary_page(
            ranges,
            after=after,
            tenant=tenant,
            limit=limit,
            max_keys=max_keys,
            stops=index_stops(known),
            empty=empty,
        )
        pages += 1
        assert len(page.items) <= limit
        listed += [ids[item["id"]] for item in page.items]
        if page.resume_after is None:
            break
        assert after is None or page.resume_after > after, "a page made no progress"
        after = page.resume_after
    await store.close()
    return listed, expected, pages


@settings(max_examples=300, deadline=None)
@given(
    entries=jobs,
    filters=st.tuples(
        st.none() | st.sampled_from(STATES), st.none() | st.sampled_from(QUEUES), st.none() | st.sampled_from(TENANTS)
    ),
    limit=st.integers(1, 8),
    max_keys=st.integers(1, 12),
    known=st.lists(st.sampled_from(QUEUES), unique=True),
    skip=st.booleans(),
)
def test_following_pages_lists_every_matching_job_once_in_key_order(
    entries: list[tuple[str, str, str]],
    filters: Filters,
    limit: int,
    max_keys: int,
    known: list[str],
    skip: bool,
) -> None:
    listed, expected, pages = asyncio.run(walk(entries, filters, limit, max_keys, known, skip))

    assert listed == expected
    assert pages <= len(entries) + len(STATES) + 1
