"""A scheduler loop that keeps failing says so (issue 33, point 1): before, it only logged ``store error in
scheduler loop`` while ``/healthz`` answered ok and the API went on accepting jobs that never started.

The scheduler runs as ``fedq server`` runs it on the embedded store (``SchedulerTask``, its own loop on the
API's event loop), over a store that fails its dispatch txns (with etcd's words of the issue; an oversized
change no longer fails a cycle, so any store error stands in) until the test heals it. While it fails,
``/healthz`` is not ok and names the error, the metrics count the failed turns, and ``fedq explain`` of a
waiting job says no cycle gets through; once healed, all three recover and the job is dispatched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from federation import keys
from federation.config import FederationConfig
from federation.scheduler.health import FAILING_AFTER
from federation.scheduler.process import SchedulerTask
from federation.store import MemoryStore, Op, Store, StoreError
from policies.clock import ManualClock
from tests.api.conftest import START, serving
from tests.api.support import Api, job_spec, join, report

REFUSED = "grpc: received message larger than max (7898350 vs. 2097152)"  # what etcd answered in the issue
WITHIN = 10.0  # real seconds for the loop to fail its turns, or recover


class RefusesDispatches:
    """The store, failing every txn that writes an assignment while ``broken``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.broken = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        if self.broken and any(op.kind == "put" and op.key.startswith(keys.ASSIGNMENTS) for op in success):
            raise StoreError(f"RESOURCE_EXHAUSTED: {REFUSED}")
        return await self.store.txn(compares, success, failure)


async def _until(what: str, check: Callable[[], Awaitable[bool]], seen: Callable[[], object]) -> None:
    """Poll ``check`` (the loop's turns have no event a test can wait on) for at most ``WITHIN`` seconds."""
    try:
        async with asyncio.timeout(WITHIN):
            while not await check():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"not {what} within {WITHIN}s; last seen: {seen()}") from None


async def _failed_turns(api: Api) -> float:
    text = (await api.http.get("/metrics", headers=api.auth("admin"))).text
    line = next((line for line in text.splitlines() if line.startswith("fedq_scheduler_failed_turns_total ")), None)
    return float(line.split()[1]) if line is not None else 0.0


async def test_a_failing_scheduler_loop_says_so_in_health_metrics_and_explain() -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    faulty = RefusesDispatches(store)
    async with serving(store, clock) as api:
        credential = await join(api, "c1")
        await report(api, "c1", credential)
        submitted = await api.http.post(
            "/v1/jobs", json=job_spec("waits", queue="research.nlp"), headers=api.auth("carol")
        )
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]
        runner = SchedulerTask(faulty, FederationConfig.model_validate({"cyclePeriod": "50ms"}), clock)  # type: ignore[arg-type]
        api.app.state.scheduler = runner
        runner.start()
        health: dict[str, Any] = {}

        async def failing() -> bool:
            nonlocal health
            health = (await api.http.get("/healthz")).json()
            return (health.get("scheduler") or {}).get("failures", 0) >= FAILING_AFTER

        try:
            await _until("told of the failing loop", failing, lambda: health)
            failed = await _failed_turns(api)
            explained = (await api.http.get(f"/v1/jobs/{job_id}/explain", headers=api.auth("carol"))).json()
            print(f"while failing: /healthz {health}; failed turns {failed}; explain: {explained['summary']}")
            assert health["ok"] is False and health["leader"] is True, health
            assert REFUSED in health["scheduler"]["error"], health
            assert failed >= FAILING_AFTER, f"fedq_scheduler_failed_turns_total {failed}"
            assert "the scheduler's cycles are failing" in explained["summary"], explained
            assert REFUSED in explained["scheduler"]["error"], explained

            faulty.broken = False

            async def recovered() -> bool:
                nonlocal health
                health = (await api.http.get("/healthz")).json()
                job = (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("carol"))).json()
                return bool(health["ok"]) and job["state"] == "Dispatched"

            await _until("recovered", recovered, lambda: health)
            explained = (await api.http.get(f"/v1/jobs/{job_id}/explain", headers=api.auth("carol"))).json()
            print(f"after healing: /healthz {health}; explain: {explained['summary']}")
            assert health["scheduler"]["failures"] == 0 and health["scheduler"]["last_good"] is not None, health
        finally:
            await runner.stop()
    await store.close()
