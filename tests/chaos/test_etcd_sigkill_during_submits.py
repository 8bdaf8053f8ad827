"""etcd SIGKILLed while single and bulk submits stream in through the API (issue 22, acceptance 1): every
job a 201 acknowledged is in the store once etcd is back, a request refused while etcd was down leaves
nothing behind, retrying a request with its Idempotency-Key until it is acknowledged creates its jobs
once, and submits go on.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from federation import keys
from federation.models import JobRecord
from federation.store import EtcdServer, EtcdStore
from federation.submits import STALE_AFTER
from policies.clock import ManualClock, SystemClock
from tests.api.conftest import START, serving
from tests.api.support import Api, job_spec

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

ACKED_BEFORE_KILL = 15  # requests acknowledged before etcd is killed
REFUSED_BEFORE_RESTART = 3  # requests refused while etcd is down before it is started again
ACKED_AFTER_RESTART = 15
MAX_REQUESTS = 400
DEADLINE = 120.0
# 503s that may have written: the commit's answer was lost, or the request was accepted and its publish
# outlasted the wait (the federation publishes it): not refusals
WRITTEN = ("may yet be accepted", "this request was accepted")


def _body(names: list[str], queue: str) -> dict[str, Any]:
    jobs = [job_spec(name, queue=queue) for name in names]
    return jobs[0] if len(jobs) == 1 else {"jobs": jobs}


async def _post(api: Api, names: list[str], key: str | None, newcomer: str | None = None) -> httpx.Response:
    """alice's submit; with ``newcomer``, an admin's for that tenant, in a queue open to every tenant."""
    headers = {**api.auth("admin" if newcomer else "alice"), **({"Idempotency-Key": key} if key else {})}
    params = {"allowUnschedulable": "true", **({"tenant": newcomer} if newcomer else {})}
    body = _body(names, "scratch.default" if newcomer else "research.vision")
    return await api.http.post("/v1/jobs", params=params, json=body, headers=headers)


@pytest.mark.parametrize("per_request", [1, 100], ids=["single", "bulk"])  # 100: staged, over several txns
async def test_submits_around_an_etcd_sigkill_land_once_or_leave_nothing(per_request: int) -> None:
    with EtcdServer(clock=SystemClock()) as etcd:
        store = EtcdStore(etcd.connection, timeout=3.0, connect_timeout=0.2)
        clock = ManualClock(START)
        acknowledged: list[str] = []  # ids, from each keyed request's one 201
        acked_names: set[str] = set()
        refused: list[int] = []
        left_nothing: set[str] = set()  # names of keyless requests refused for sure
        certain = [0, 0]  # refusals for sure: alice's probes, newcomers'
        probes = 0
        loop = asyncio.get_running_loop()
        outage: asyncio.Future[None] | None = None  # the kill, then the restart, each in a thread
        restarted = False
        acked_at_restart = 0
        request = 0
        async with serving(store, clock, limits={"maxJobsPerRequest": per_request}) as api:
            async with asyncio.timeout(DEADLINE):
                for _ in range(MAX_REQUESTS):
                    names = [f"chaos-{request}-{i}" for i in range(per_request)]
                    response = await _post(api, names, key=f"request-{request}")  # retried until acknowledged
                    if response.status_code == 201:
                        answer = response.json()
                        acknowledged += answer.get("ids") or [answer["id"]]
                        acked_names.update(names)
                        request += 1
                    else:
                        assert response.status_code in (409, 503), response.text
                        refused.append(response.status_code)
                    if outage is not None and not restarted:
                        # Two keyless probes: alice's, refused for sure only where its answer says so (once
                        # it reaches its write, its commit's answer may be lost: "may yet be accepted"), and
                        # a newcomer's first submit, whose quota sum is read from the store before anything
                        # is written (tokens come from the replica's copy: authentication reads nothing).
                        for newcomer in (None, f"newcomer-{probes}"):
                            probe = [f"probe-{probes}-{newcomer or 'alice'}-{i}" for i in range(per_request)]
                            answered = await _post(api, probe, key=None, newcomer=newcomer)
                            if answered.status_code != 201 and not any(words in answered.text for words in WRITTEN):
                                left_nothing.update(probe)
                                certain[newcomer is not None] += 1
                        probes += 1
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
                clock.advance(STALE_AFTER + 1)  # what refused requests staged is swept at the next submit
                assert (await _post(api, ["after"], key=None)).status_code == 201
        reader = EtcdStore(etcd.connection)
        records = [JobRecord.from_bytes(kv.value) for kv in await reader.range(keys.JOBS)]
        index = await reader.range(keys.INDEX)
        leftovers = [kv.key for kv in await reader.range(keys.STAGED)] + [
            kv.key for kv in await reader.range(keys.OPEN_SUBMITS)
        ]
        await reader.close()
        await store.close()

    print(f"{probes} probes while etcd was down: refused for sure, alice's {certain[0]}, newcomers' {certain[1]}")
    assert restarted and refused and left_nothing, f"etcd was never down while requests came in ({certain})"
    assert len(acknowledged) >= acked_at_restart + ACKED_AFTER_RESTART * per_request  # submits went on
    assert len(set(acknowledged)) == len(acknowledged)
    stored = {record.id for record in records}
    missing = set(acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged jobs are not in the store"
    names = [record.name for record in records if record.name.startswith("chaos-")]
    assert len(names) == len(set(names)) == len(acked_names), "a retried request created jobs twice"
    assert not left_nothing & {record.name for record in records}, "a refused request left jobs behind"
    assert len(index) == len(records) and not leftovers
