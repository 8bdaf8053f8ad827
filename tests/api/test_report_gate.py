"""Reports run one at a time per replica with a few queued; past that a caller is told to retry (429)."""

from __future__ import annotations

import asyncio

import pytest

from federation.api.errors import ApiError
from federation.api.state import REPORTS_WAITING, ReportGate


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
