"""Agents' reports take turns (``AGENT_REPORTS_AT_ONCE``, issue 33 point 6): however many arrive at once,
at most that many are being served, every one is answered, and a submit does not wait for a turn. Each
report here is held inside the handler until the test lets it go, so "at once" is what the handler saw,
not a timing."""

from __future__ import annotations

import asyncio
from typing import Any

from federation.api.state import AGENT_REPORTS_AT_ONCE
from tests.api.support import NODE, Api, bearer, job_spec, join

AGENTS = 40


async def test_a_burst_of_reports_is_served_a_few_at_a_time_and_a_submit_passes_them(api: Api) -> None:
    credential = await join(api, "c1")
    clusters = api.app.state.fedq.clusters
    served = clusters.report
    inside, most = 0, 0
    go = asyncio.Event()
    entered = asyncio.Event()

    async def held(name: str, body: Any) -> Any:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        entered.set()
        try:
            await go.wait()
            return await served(name, body)
        finally:
            inside -= 1

    clusters.report = held

    async def one() -> int:
        response = await api.http.post("/v1/clusters/c1/report", json={"nodes": [NODE]}, headers=bearer(credential))
        return response.status_code

    reports = [asyncio.create_task(one()) for _ in range(AGENTS)]
    await entered.wait()
    for _ in range(AGENTS):  # every report has had its chance to reach the handler
        await asyncio.sleep(0)
    submit = await asyncio.wait_for(
        api.http.post("/v1/jobs", json=job_spec(), params={"hold": "true"}, headers=api.auth("alice")), 10
    )
    waiting = inside
    go.set()
    statuses = await asyncio.gather(*reports)
    print(
        f"{AGENTS} reports at once: at most {most} in the handler together (bound {AGENT_REPORTS_AT_ONCE}); "
        f"a submit answered {submit.status_code} with {waiting} held inside; reports answered {set(statuses)}"
    )
    assert submit.status_code == 201, submit.text
    assert statuses == [200] * AGENTS, statuses
    assert most <= AGENT_REPORTS_AT_ONCE, (
        f"{most} of {AGENTS} reports in the handler at once (bound {AGENT_REPORTS_AT_ONCE})"
    )
