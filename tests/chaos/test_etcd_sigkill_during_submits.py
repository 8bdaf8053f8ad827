"""etcd SIGKILLed while single and bulk submits stream in through the API: every job a 201 acknowledged is
in the store once etcd is back, and submits go on.

Checked here: acknowledged jobs all present. Not checked here (another part of issue 22, with the atomic
bulk and ``Idempotency-Key`` work): that a refused request leaves nothing behind, and that a retried
request with the same key creates nothing new.
"""

from __future__ import annotations

import asyncio

import pytest

from federation import keys
from federation.store import EtcdServer, EtcdStore
from policies.clock import ManualClock, SystemClock
from tests.api.conftest import START, serving
from tests.api.support import job_spec

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

ACKED_BEFORE_KILL = 15  # requests acknowledged before etcd is killed
REFUSED_BEFORE_RESTART = 3  # requests refused while etcd is down before it is started again
ACKED_AFTER_RESTART = 15
MAX_REQUESTS = 400
DEADLINE = 120.0


@pytest.mark.parametrize("per_request", [1, 20], ids=["single", "bulk"])
async def test_jobs_acknowledged_around_an_etcd_sigkill_are_all_stored(per_request: int) -> None:
    with EtcdServer(clock=SystemClock()) as etcd:
        store = EtcdStore(etcd.connection, timeout=3.0, connect_timeout=0.2)
        clock = ManualClock(START)
        acknowledged: list[str] = []
        refused: list[int] = []
        loop = asyncio.get_running_loop()
        outage: asyncio.Future[None] | None = None  # the kill, then the restart, each in a thread
        restarted = False
        acked_at_restart = 0
        async with serving(store, clock, limits={"maxJobsPerRequest": per_request}) as api:
            async with asyncio.timeout(DEADLINE):
                for n in range(MAX_REQUESTS):
                    jobs = [job_spec(f"chaos-{n}-{i}") for i in range(per_request)]
                    body = jobs[0] if per_request == 1 else {"jobs": jobs}
                    response = await api.http.post(
                        "/v1/jobs", params={"allowUnschedulable": "true"}, json=body, headers=api.auth("alice")
                    )
                    if response.status_code == 201:
                        answer = response.json()
                        acknowledged += answer.get("ids") or [answer["id"]]
                    else:
                        refused.append(response.status_code)
                    if outage is None and len(acknowledged) >= ACKED_BEFORE_KILL * per_request:
                        outage = loop.run_in_executor(None, lambda: etcd.stop(kill=True))
                    elif outage is not None and not restarted and len(refused) >= REFUSED_BEFORE_RESTART:
                        await outage
                        outage, restarted = loop.run_in_executor(None, etcd.start), True
                        acked_at_restart = len(acknowledged)
                    if restarted and len(acknowledged) >= acked_at_restart + ACKED_AFTER_RESTART * per_request:
                        break
            if outage is not None:
                await outage
        reader = EtcdStore(etcd.connection)
        stored = {kv.key.removeprefix(keys.JOBS) for kv in await reader.range(keys.JOBS)}
        await reader.close()
        await store.close()

    assert restarted and refused, "etcd was never down while requests came in"
    assert len(acknowledged) >= acked_at_restart + ACKED_AFTER_RESTART * per_request  # submits went on
    assert len(set(acknowledged)) == len(acknowledged)
    missing = set(acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged jobs are not in the store"
