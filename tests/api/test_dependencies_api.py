"""``spec.dependsOn`` at submit: resolved to ids on the records (``after``), or a 422 naming the entry's
field with nothing written (unknown jobs, another tenant's, cycles within a bulk, aftercorr misuse)."""

from __future__ import annotations

from typing import Any

from tests.api.support import Api, job_spec


async def _submit(api: Api, body: object, who: str = "alice") -> Any:
    return await api.http.post("/v1/jobs?allowUnschedulable=true", json=body, headers=api.auth(who))


async def _refused(api: Api, body: object, field: str, who: str = "alice") -> str:
    before = await api.store.revision()
    response = await _submit(api, body, who)
    assert response.status_code == 422, response.text
    detail = response.json()
    assert [f["field"] for f in detail["fields"]] == [field]
    assert await api.store.revision() == before  # nothing written
    return str(detail["error"])


async def test_stored_jobs_and_arrays_resolve_to_ids(api: Api) -> None:
    first = (await _submit(api, job_spec("first"))).json()["id"]
    array = (await _submit(api, job_spec("sweep", array={"count": 3}))).json()["id"]
    body = job_spec(
        "after",
        dependsOn=[
            {"job": first},
            {"array": array, "condition": "afterany"},
            {"job": array, "condition": "afternotok"},
        ],
    )
    created = (await _submit(api, body)).json()["id"]
    record = (await api.http.get(f"/v1/jobs/{created}", headers=api.auth("alice"))).json()
    assert record["after"] == [
        {"job": first, "condition": "afterok", "count": 0},
        {"job": array, "condition": "afterany", "count": 3},
        {"job": array, "condition": "afternotok", "count": 3},
    ]


async def test_a_bulk_names_its_own_jobs_and_aftercorr_pairs_elements(api: Api) -> None:
    body = {
        "jobs": [
            job_spec("post", array={"count": 2}, dependsOn=[{"name": "pre", "condition": "aftercorr"}]),
            job_spec("pre", array={"count": 2}),
            job_spec("report", dependsOn=[{"name": "post"}]),
        ]
    }
    ids = (await _submit(api, body)).json()["ids"]
    post0, post1, pre0, _pre1, report = ids
    base = pre0.rsplit("-", 1)[0]
    after = [(await api.http.get(f"/v1/jobs/{i}", headers=api.auth("alice"))).json()["after"] for i in (post1, report)]
    assert after[0] == [{"job": f"{base}-1", "condition": "afterok", "count": 0}]
    assert after[1] == [{"job": post0.rsplit("-", 1)[0], "condition": "afterok", "count": 2}]


async def test_an_unknown_job_and_another_tenants_job_read_alike(api: Api) -> None:
    theirs = (await _submit(api, job_spec("theirs"), who="bob")).json()["id"]
    unknown = await _refused(api, job_spec("x", dependsOn=[{"job": "nosuchjob"}]), "spec.dependsOn[0].job")
    other = await _refused(api, job_spec("x", dependsOn=[{"job": theirs}]), "spec.dependsOn[0].job")
    assert "no job or array 'nosuchjob' of tenant 'alice'" in unknown
    assert other.replace(theirs, "ID") == unknown.replace("nosuchjob", "ID")


async def test_cycles_are_refused_with_the_ring(api: Api) -> None:
    message = await _refused(api, job_spec("self", dependsOn=[{"name": "self"}]), "spec.dependsOn")
    assert "dependency cycle: self -> self" in message
    ring = {
        "jobs": [
            job_spec("a", dependsOn=[{"name": "c"}]),
            job_spec("b", dependsOn=[{"name": "a"}]),
            job_spec("c", dependsOn=[{"name": "b"}]),
            job_spec("d", dependsOn=[{"name": "a"}]),
        ]
    }
    message = await _refused(api, ring, "jobs[1].spec.dependsOn")
    assert "dependency cycle: a -> c -> b -> a" in message


async def test_bad_references_name_their_field(api: Api) -> None:
    first = (await _submit(api, job_spec("first"))).json()["id"]
    await _refused(api, job_spec("x", dependsOn=[{"name": "missing"}]), "spec.dependsOn[0].name")
    twice = {"jobs": [job_spec("a"), job_spec("a"), job_spec("b", dependsOn=[{"name": "a"}])]}
    await _refused(api, twice, "jobs[2].spec.dependsOn[0].name")
    corr = job_spec("x", dependsOn=[{"job": first, "condition": "aftercorr"}])
    assert "this job is not an array" in await _refused(api, corr, "spec.dependsOn[0].job")
    corr = job_spec("x", array={"count": 2}, dependsOn=[{"job": first, "condition": "aftercorr"}])
    assert "is one job" in await _refused(api, corr, "spec.dependsOn[0].job")
    response = await _submit(api, job_spec("x", dependsOn=[{"job": first, "name": "a"}]))
    assert response.status_code == 422 and "exactly one of job" in response.text
