"""A run that fails for the job's own reasons goes back to the queue, at most ``maxRetries`` times, each
retry an event with a doubling backoff; then the job ends Failed with the last reason. A requeue that
is the cluster's doing (handed back, preempted) is not a retry (issue 21, section 3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiFactory
from tests.api.support import Api, dispatch, job_spec, join, report

pytestmark = pytest.mark.etcd


async def submit(api: Api, **spec: Any) -> str:
    response = await api.http.post("/v1/jobs", json=job_spec(**spec), headers=api.auth("alice"))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def job(api: Api, job_id: str) -> dict[str, Any]:
    return dict((await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json())


async def update(api: Api, credential: str, job_id: str, epoch: int, state: str, **fields: Any) -> None:
    body = {"job_id": job_id, "epoch": epoch, "time": api.clock.now(), "state": state, **fields}
    assert (await report(api, "east", credential, updates=[body]))["refused"] == []


async def test_a_failed_run_is_retried_after_a_doubling_backoff_then_fails_with_the_last_reason(
    api_on: ApiFactory,
) -> None:
    async with api_on(jobs={"maxRetries": 2, "retryBackoff": "10s"}) as api:
        east = await join(api, "east")
        job_id = await submit(api)
        for retry, wait, shown in ((1, 10.0, "10s"), (2, 20.0, "20s")):
            epoch = await dispatch(api, job_id, "east")
            await update(api, east, job_id, epoch, "Failed", exit_code=3, reason="exit code 3", log_tail="boom")
            retried = await job(api, job_id)
            assert (retried["state"], retried["cluster"], retried["retries"], retried["attempt"]) == (
                "Pending",
                "",
                retry,
                retry,
            )
            assert retried["retry_at"] == api.clock.now() + wait
            assert retried["reason"] == f"failed on east: exit code 3; retry {retry} of 2 in {shown}"
            assert (retried["exit_code"], retried["log_tail"]) == (3, "boom")
            api.clock.advance(wait)
        epoch = await dispatch(api, job_id, "east")
        await update(api, east, job_id, epoch, "Failed", exit_code=4, reason="exit code 4")
        failed = await job(api, job_id)
        assert (failed["state"], failed["reason"], failed["exit_code"]) == (
            "Failed",
            "exit code 4 (after 2 retries)",
            4,
        )
        assert [e["to"] for e in failed["events"]] == [
            "Pending",
            *["Dispatched", "Pending"] * 2,
            "Dispatched",
            "Failed",
        ]
        assert [e["reason"] for e in failed["events"] if "retry" in e["reason"]] == [
            "failed on east: exit code 3; retry 1 of 2 in 10s",
            "failed on east: exit code 3; retry 2 of 2 in 20s",
        ]


async def test_the_specs_max_retries_overrides_the_federations(api_on: ApiFactory) -> None:
    async with api_on(jobs={"maxRetries": 5}) as api:
        east = await join(api, "east")
        job_id = await submit(api, maxRetries=1)
        await update(api, east, job_id, await dispatch(api, job_id, "east"), "Failed", reason="exit code 1")
        assert (await job(api, job_id))["reason"].endswith("retry 1 of 1 in 10s")
        await update(api, east, job_id, await dispatch(api, job_id, "east"), "Failed", reason="exit code 1")
        assert (await job(api, job_id))["state"] == "Failed"


async def test_requeues_that_are_the_clusters_doing_are_not_retries(api_on: ApiFactory) -> None:
    async with api_on(jobs={"maxRetries": 0}) as api:
        east = await join(api, "east")
        job_id = await submit(api, preemptible=True)
        epoch = await dispatch(api, job_id, "east")
        await update(api, east, job_id, epoch, "Pending", reason="does not fit any node of this cluster")
        epoch = await dispatch(api, job_id, "east")
        await update(api, east, job_id, epoch, "Running")
        await update(api, east, job_id, epoch, "Pending", reason="evicted on this cluster: preempted")
        requeued = await job(api, job_id)
        assert (requeued["state"], requeued["attempt"], requeued["retries"], requeued.get("retry_at")) == (
            "Pending",
            2,
            0,
            None,
        )
        epoch = await dispatch(api, job_id, "east")
        await update(api, east, job_id, epoch, "Failed", reason="exit code 1")
        assert (await job(api, job_id))["state"] == "Failed"  # no retries left for its own failure


async def test_a_job_being_cancelled_is_not_retried_it_ends_cancelled(api_on: ApiFactory) -> None:
    """The cancel was asked before the run failed (killed by it, say): the cancel is honoured."""
    async with api_on() as api:
        east = await join(api, "east")
        job_id = await submit(api)
        epoch = await dispatch(api, job_id, "east")
        await update(api, east, job_id, epoch, "Running")
        assert (await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).status_code == 200
        await update(api, east, job_id, epoch, "Failed", reason="exit code 143")
        assert ((ended := await job(api, job_id))["state"], ended["retries"]) == ("Cancelled", 0)
