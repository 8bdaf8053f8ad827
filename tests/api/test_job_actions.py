"""Hold, release, requeue, update and bulk actions through the API (issue 23): each a lifecycle event,
a tenant's on its own jobs only, refusals naming what to do and writing nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from federation import keys
from federation.jobs import JobRepository
from federation.models import JobState
from tests import jobflow
from tests.api.conftest import ApiFactory
from tests.api.support import Api, job_spec


async def submit(api: Api, who: str = "alice", query: str = "", **spec: object) -> str:
    response = await api.http.post(f"/v1/jobs{query}", json=job_spec(**spec), headers=api.auth(who))  # type: ignore[arg-type]
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def job(api: Api, job_id: str) -> dict[str, Any]:
    response = await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("admin"))
    assert response.status_code == 200, response.text
    return dict(response.json())


async def refused(api: Api, method: str, path: str, who: str, status: int, text: str, body: object = None) -> None:
    """The request is answered ``status`` with ``text`` in its error or a field's name, and writes nothing."""
    before = await api.store.revision()
    response = await api.http.request(method, path, json=body, headers=api.auth(who))
    assert response.status_code == status, response.text
    answer = response.json()
    assert text in answer["error"] or any(text in f["field"] for f in answer["fields"]), answer
    assert await api.store.revision() == before


async def test_hold_and_release_keep_the_job_pending_and_say_who(api: Api) -> None:
    job_id = await submit(api)
    held = await api.http.post(f"/v1/jobs/{job_id}/hold", headers=api.auth("alice"))
    assert held.status_code == 200, held.text
    assert held.json() == {"id": job_id, "state": "Pending", "changed": True, "reason": "held by tenant/alice"}
    record = await job(api, job_id)
    assert (record["held_by"], record["held_at"]) == ("tenant/alice", api.clock.now())
    again = await api.http.post(f"/v1/jobs/{job_id}/hold", headers=api.auth("alice"))
    assert again.json()["changed"] is False
    released = await api.http.post(f"/v1/jobs/{job_id}/release", headers=api.auth("alice"))
    assert released.json() == {"id": job_id, "state": "Pending", "changed": True, "reason": "released by tenant/alice"}
    assert (await job(api, job_id))["held_by"] is None


async def test_submit_held_and_an_admins_hold_only_an_admin_releases(api: Api) -> None:
    job_id = await submit(api, query="?hold=true")
    assert (await job(api, job_id))["held_by"] == "tenant/alice"
    other = await submit(api)
    assert (await api.http.post(f"/v1/jobs/{other}/hold", headers=api.auth("admin"))).status_code == 200
    await refused(api, "POST", f"/v1/jobs/{other}/release", "alice", 409, "held by admin/bootstrap: only an admin may")
    assert (await api.http.post(f"/v1/jobs/{other}/release", headers=api.auth("admin"))).json()["changed"]


async def test_a_running_job_cannot_be_held_and_nothing_is_written(api: Api) -> None:
    job_id = await submit(api)
    await jobflow.advance(JobRepository(api.store), job_id, JobState.RUNNING, api.clock.now())
    await refused(api, "POST", f"/v1/jobs/{job_id}/hold", "alice", 409, "job is Running: no hold from there")


async def test_requeue_stops_a_running_job_through_its_agent_and_puts_a_failed_one_back(api: Api) -> None:
    repository = JobRepository(api.store)
    running = await submit(api)
    await jobflow.advance(repository, running, JobState.RUNNING, api.clock.now())
    asked = await api.http.post(f"/v1/jobs/{running}/requeue", headers=api.auth("alice"))
    assert asked.json() == {
        "id": running,
        "state": "Running",
        "changed": True,
        "reason": "requeue requested by tenant/alice",
    }
    record = await job(api, running)
    order = await api.store.get(keys.cancel(record["cluster"], running))
    assert order is not None and json.loads(order.value)["requeue"] is True
    failed = await submit(api, name="second")
    await jobflow.advance(repository, failed, JobState.FAILED, api.clock.now())
    back = await api.http.post(f"/v1/jobs/{failed}/requeue", headers=api.auth("alice"))
    assert (back.json()["state"], back.json()["reason"]) == ("Pending", "requeued by tenant/alice")
    again = await job(api, failed)
    assert (again["attempt"], again["retries"], again["end_time"]) == (1, 0, None)


async def test_update_is_checked_as_a_submit_and_recorded(api: Api) -> None:
    job_id = await submit(api)
    body = {"priority": 50, "walltime": "30m"}
    response = await api.http.patch(f"/v1/jobs/{job_id}", json=body, headers=api.auth("alice"))
    assert response.status_code == 200, response.text
    assert response.json()["reason"] == "updated by tenant/alice: priority 0 -> 50, walltime 1h -> 30m"
    record = await job(api, job_id)
    assert (record["priority"], record["spec"]["priority"], record["spec"]["walltime"]) == (50, 50, 1800.0)
    assert record["events"][-1]["reason"] == response.json()["reason"]


@pytest.mark.parametrize(
    ("who", "body", "status", "text"),
    [
        ("alice", {"walltime": "2h"}, 403, "a tenant may only shorten a job's walltime (it is 1h)"),
        ("alice", {"queue": "research.nlp"}, 403, "tenant 'alice' may not submit to queue 'research.nlp'"),
        ("alice", {"queue": "nowhere"}, 422, "unknown queue 'nowhere'"),
        ("alice", {"priority": 10_000_000}, 422, "spec.priority"),
        ("alice", {"walltime": "-5m"}, 422, "spec.walltime"),
        ("alice", {"colour": "red"}, 422, "colour"),
        ("alice", {}, 422, "nothing to update"),
        ("bob", {"priority": 1}, 403, "belongs to another tenant"),
    ],
)
async def test_a_bad_update_is_refused_naming_the_field_and_writes_nothing(
    api: Api, who: str, body: dict[str, object], status: int, text: str
) -> None:
    job_id = await submit(api)
    await refused(api, "PATCH", f"/v1/jobs/{job_id}", who, status, text, body)


async def test_an_admin_may_lengthen_the_walltime(api: Api) -> None:
    job_id = await submit(api)
    response = await api.http.patch(f"/v1/jobs/{job_id}", json={"walltime": "3h"}, headers=api.auth("admin"))
    assert response.status_code == 200, response.text
    assert (await job(api, job_id))["spec"]["walltime"] == 10800.0


async def test_bulk_actions_by_array_and_by_filters_report_what_changed(api: Api) -> None:
    array = await submit(api, array={"count": 4})
    loose = await submit(api, name="loose")
    theirs = await submit(api, "bob", name="theirs")
    held = await api.http.post("/v1/jobs/actions", json={"action": "hold", "array": array}, headers=api.auth("alice"))
    assert held.json() == {"action": "hold", "matched": 4, "changed": 4, "unchanged": 0, "refused": 0, "refusals": []}
    by_filter = {"action": "release", "state": "Pending", "queue": "research.vision"}
    released = await api.http.post("/v1/jobs/actions", json=by_filter, headers=api.auth("alice"))
    # alice's five pending jobs match (bob's does not): four were held, the loose one was not
    assert (released.json()["matched"], released.json()["changed"], released.json()["unchanged"]) == (5, 4, 1)
    cancel = {"action": "cancel", "ids": [loose, f"{array}-0"]}
    cancelled = await api.http.post("/v1/jobs/actions", json=cancel, headers=api.auth("alice"))
    assert cancelled.json()["changed"] == 2
    assert (await job(api, loose))["state"] == "Cancelled"
    assert (await job(api, theirs))["state"] == "Pending"
    twice = await api.http.post("/v1/jobs/actions", json=cancel, headers=api.auth("alice"))
    assert (twice.json()["refused"], twice.json()["refusals"][0]["message"]) == (2, "job is already Cancelled")


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"action": "hold", "ids": ["BOB"]}, 403, "belongs to another tenant: nothing was changed"),
        ({"action": "hold", "ids": ["ALICE", "BOB"]}, 403, "belongs to another tenant: nothing was changed"),
        ({"action": "cancel", "array": "BOBS"}, 403, "belongs to another tenant: nothing was changed"),
        ({"action": "hold", "state": "Pending", "tenant": "bob"}, 403, "cannot act on jobs of tenant 'bob'"),
        ({"action": "hold", "ids": ["no-such-job"]}, 404, "not found: nothing was changed"),
        ({"action": "hold", "array": "no-such-array"}, 404, "not found"),
        ({"action": "hold"}, 422, "name the jobs one way"),
        ({"action": "hold", "ids": ["ALICE"], "array": "BOBS"}, 422, "name the jobs one way"),
        ({"action": "explode", "ids": ["ALICE"]}, 422, "action"),
    ],
)
async def test_a_bulk_action_on_another_tenants_jobs_is_refused_and_changes_nothing(
    api: Api, body: dict[str, Any], status: int, text: str
) -> None:
    names = {
        "ALICE": await submit(api),
        "BOB": await submit(api, "bob"),
        "BOBS": await submit(api, "bob", array={"count": 2}),
    }
    for key in ("ids", "array"):
        if isinstance(body.get(key), list):
            body[key] = [names.get(name, name) for name in body[key]]
        elif key in body:
            body[key] = names.get(body[key], body[key])
    await refused(api, "POST", "/v1/jobs/actions", "alice", status, text, body)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/jobs/{id}/hold", None),
        ("POST", "/v1/jobs/{id}/release", None),
        ("POST", "/v1/jobs/{id}/requeue", None),
        ("PATCH", "/v1/jobs/{id}", {"priority": 5}),
    ],
)
async def test_another_tenants_job_is_out_of_reach_of_every_action(
    api: Api, method: str, path: str, body: dict[str, object] | None
) -> None:
    theirs = await submit(api, "bob")
    await api.http.post(f"/v1/jobs/{theirs}/hold", headers=api.auth("bob"))  # so release could change it
    await refused(api, method, path.format(id=theirs), "alice", 403, "belongs to another tenant", body)
    await refused(api, method, path.format(id="no-such-job"), "alice", 404, "not found", body)
    assert (await job(api, theirs))["held_by"] == "tenant/bob"


async def test_admin_actions_are_audited(api_on: ApiFactory, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    async with api_on(sections={"audit": {"log": str(log)}}) as api:
        job_id = await submit(api)
        await api.http.post(f"/v1/jobs/{job_id}/hold", headers=api.auth("alice"))  # a tenant's own: not audited
        await api.http.post(f"/v1/jobs/{job_id}/release", headers=api.auth("alice"))
        await api.http.post(f"/v1/jobs/{job_id}/hold", headers=api.auth("admin"))
        await api.http.patch(f"/v1/jobs/{job_id}", json={"priority": 3}, headers=api.auth("admin"))
        bulk = {"action": "cancel", "ids": [job_id]}
        await api.http.post("/v1/jobs/actions", json=bulk, headers=api.auth("admin"))
    written = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["action"], line["result"]) for line in written[1:]] == [  # after the fixture's queues.apply
        ("job.hold", "ok"),
        ("job.update", "ok"),
        ("job.actions", "ok"),
    ]
    assert written[1]["target"] == {"job_id": job_id}
