"""Reports run one at a time per replica with a few queued; past that a caller is told to retry (429).
The records they read serve the next ones for a few seconds."""

from __future__ import annotations

import asyncio

import pytest

from federation.api.errors import ApiError
from federation.api.state import JOBS_FRESH_FOR, REPORTS_WAITING, ReportGate
from federation.jobs import JobRepository, expand
from federation.models import JobManifest
from federation.store import MemoryStore
from tests.api.conftest import START
from tests.api.support import job_spec


async def test_reports_past_the_queue_are_429_and_the_queue_drains_in_turn() -> None:
    gate = ReportGate()
    release = asyncio.Event()
    order: list[int] = []

    async def report(number: int) -> None:
        async with gate.slot():
            order.append(number)
            await release.wait()

    running = [asyncio.create_task(report(n)) for n in range(1 + REPORTS_WAITING)]
    await asyncio.sleep(0)  # each task enters the gate, or its queue
    with pytest.raises(ApiError) as refused:
        await report(99)
    assert refused.value.status == 429 and "retry" in refused.value.message
    assert order == [0]
    release.set()
    await asyncio.wait_for(asyncio.gather(*running), 5)
    assert order == list(range(1 + REPORTS_WAITING))


async def test_the_records_a_report_read_serve_the_next_ones_for_a_few_seconds() -> None:
    store = MemoryStore()
    gate = ReportGate()
    await JobRepository(store).create(expand(JobManifest.model_validate(job_spec("a")), "alice", START))
    assert len(await gate.jobs(store, START)) == 1
    await JobRepository(store).create(expand(JobManifest.model_validate(job_spec("b")), "alice", START))

    assert len(await gate.jobs(store, START + JOBS_FRESH_FOR - 1)) == 1
    assert len(await gate.jobs(store, START + JOBS_FRESH_FOR)) == 2
    await store.close()
