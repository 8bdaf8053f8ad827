"""Submit, list, get and cancel through the API, with tenant isolation."""

from __future__ import annotations

from tests.api.support import Api, job_spec


async def test_submit_get_list_cancel(api: Api) -> None:
    response = await api.http.post("/v1/jobs", json=job_spec(priority=5), headers=api.auth("alice"))
    assert response.status_code == 201, response.text
    job_id = response.json()["id"]

    job = (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()
    assert job["tenant"] == "alice"
    assert job["state"] == "Pending"
    assert job["priority"] == 5
    assert job["submit_time"] == api.clock.now()
    assert [event["to"] for event in job["events"]] == ["Pending"]
    assert job["spec"]["tasks"][0]["resources"] == {"cpu": 2.0, "memory": 4 * 2**30}

    listed = (await api.http.get("/v1/jobs", params={"state": "Pending"}, headers=api.auth("alice"))).json()
    assert [item["id"] for item in listed["items"]] == [job_id]

    api.clock.advance(30)
    cancelled = await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))
    assert cancelled.status_code == 200
    assert cancelled.json()["state"] == "Cancelled"
    job = (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()
    assert [event["to"] for event in job["events"]] == ["Pending", "Cancelled"]
    assert job["end_time"] == api.clock.now()
    assert (await api.http.get("/v1/jobs", params={"state": "Pending"}, headers=api.auth("alice"))).json()[
        "items"
    ] == []


async def test_bulk_submit_and_array_expansion(api: Api) -> None:
    bulk = {"jobs": [job_spec(f"j{i}") for i in range(3)] + [job_spec("arr", array={"count": 4})]}
    response = await api.http.post("/v1/jobs", json=bulk, headers=api.auth("bob"))
    assert response.status_code == 201, response.text
    ids = response.json()["ids"]
    assert len(ids) == 7
    listed = (await api.http.get("/v1/jobs", headers=api.auth("bob"))).json()["items"]
    assert sorted(item["id"] for item in listed) == sorted(ids)
    array_ids = [i for i in ids if "-" in i]
    assert [int(i.rsplit("-", 1)[1]) for i in array_ids] == [0, 1, 2, 3]


async def test_tenant_sees_only_its_own_jobs_and_admin_sees_all(api: Api) -> None:
    alice = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).json()["id"]
    bob = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("bob"))).json()["id"]
    mine = (await api.http.get("/v1/jobs", headers=api.auth("alice"))).json()["items"]
    assert [item["id"] for item in mine] == [alice]
    everyone = (await api.http.get("/v1/jobs", headers=api.auth("admin"))).json()["items"]
    assert {item["id"] for item in everyone} == {alice, bob}
    assert (await api.http.get(f"/v1/jobs/{bob}", headers=api.auth("alice"))).status_code == 403


async def test_admin_submits_on_behalf_of_a_named_tenant(api: Api) -> None:
    response = await api.http.post("/v1/jobs", json=job_spec(), params={"tenant": "carol"}, headers=api.auth("admin"))
    assert response.status_code == 403  # carol may not use research.vision
    response = await api.http.post(
        "/v1/jobs", json=job_spec(queue="research.nlp"), params={"tenant": "carol"}, headers=api.auth("admin")
    )
    assert response.status_code == 201
    job = (await api.http.get(f"/v1/jobs/{response.json()['id']}", headers=api.auth("carol"))).json()
    assert job["tenant"] == "carol"


async def test_pagination_follows_continue_tokens(api: Api) -> None:
    ids = (
        await api.http.post("/v1/jobs", json={"jobs": [job_spec(f"p{i}") for i in range(7)]}, headers=api.auth("alice"))
    ).json()["ids"]
    seen: list[str] = []
    params: dict[str, str | int] = {"limit": 3}
    while True:
        page = (await api.http.get("/v1/jobs", params=params, headers=api.auth("alice"))).json()
        seen += [item["id"] for item in page["items"]]
        if not page["continue"]:
            break
        params["continue"] = page["continue"]
    assert seen == sorted(ids)


async def test_queue_view_counts_pending_jobs(api: Api) -> None:
    await api.http.post("/v1/jobs", json={"jobs": [job_spec(f"q{i}") for i in range(3)]}, headers=api.auth("alice"))
    tree = (await api.http.get("/v1/queues", headers=api.auth("alice"))).json()["queues"]
    research = next(q for q in tree if q["name"] == "research")
    vision = next(q for q in research["children"] if q["name"] == "vision")
    assert (research["pending"], vision["pending"]) == (3, 3)


async def test_health_metrics_and_openapi(api: Api) -> None:
    assert (await api.http.get("/healthz")).json()["ok"] is True
    await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))
    metrics = (await api.http.get("/metrics", headers=api.auth("admin"))).text
    assert 'fedq_jobs_submitted_total{queue="research.vision"} 1.0' in metrics
    paths = (await api.http.get("/openapi.json")).json()["paths"]
    assert {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/queues", "/v1/tenants/{name}/tokens"} <= set(paths)


async def test_a_jobs_tasks_carry_their_names_and_replicas_even_when_defaulted(api: Api) -> None:
    """Issue 32: the spec comes back as submitted, without defaults, and a task given no name had none
    in it (the dashboard's spec line read ``undefined: 4 x cpu=10``); each task has its name and
    replicas, as logs and events name them."""
    tasks = [{"resources": {"cpu": "1"}}, {"name": "worker", "replicas": 4, "resources": {"cpu": "10"}}]
    response = await api.http.post("/v1/jobs", json=job_spec(tasks=tasks), headers=api.auth("alice"))
    assert response.status_code == 201, response.text
    job = (await api.http.get(f"/v1/jobs/{response.json()['id']}", headers=api.auth("alice"))).json()
    assert job["spec"]["tasks"] == [
        {"name": "main", "replicas": 1, "resources": {"cpu": 1.0}},
        {"name": "worker", "replicas": 4, "resources": {"cpu": 10.0}},
    ]
    assert "priority" not in job["spec"]  # the rest of the spec stays as submitted, defaults left out
