"""The OpenAPI schema tells clients what the API really answers: the error shape on every route, and
the media types that are not JSON (found missing by schemathesis: 12 undocumented statuses, 2 types)."""

from __future__ import annotations

from typing import Any

from federation.api.errors import ErrorBody
from tests.api.support import Api

REF = {"$ref": "#/components/schemas/ErrorBody"}


async def schema(api: Api) -> dict[str, Any]:
    response = await api.http.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


async def test_every_route_documents_the_error_shape(api: Api) -> None:
    paths = (await schema(api))["paths"]
    routes = [
        (path, method, op) for path, ops in paths.items() if path.startswith("/v1/") for method, op in ops.items()
    ]
    assert len(routes) >= 16  # every route of the API overview, and any added later
    for path, method, op in routes:
        for status in ("400", "401", "403", "404", "409", "413", "422", "503"):
            assert op["responses"][status]["content"]["application/json"]["schema"] == REF, (method, path, status)


async def test_error_bodies_are_what_the_schema_says(api: Api) -> None:
    missing = await api.http.get("/v1/jobs/no-such-job", headers=api.auth("admin"))
    nobody = await api.http.get("/v1/jobs")
    invalid = await api.http.get("/v1/jobs", params={"limit": "many"}, headers=api.auth("admin"))
    assert (missing.status_code, nobody.status_code, invalid.status_code) == (404, 401, 422)
    for response in (missing, nobody, invalid):
        ErrorBody.model_validate(response.json())
    assert ErrorBody.model_validate(invalid.json()).fields[0].field.endswith("limit")


async def test_non_json_answers_are_documented(api: Api) -> None:
    paths = (await schema(api))["paths"]
    assert list(paths["/metrics"]["get"]["responses"]["200"]["content"]) == ["text/plain"]
    for report in ("/v1/reports/quota", "/v1/reports/userprio"):
        assert set(paths[report]["get"]["responses"]["200"]["content"]) == {"application/json", "text/csv"}


async def test_every_body_and_answer_is_a_declared_model(api: Api) -> None:
    """Request bodies (read by the handlers themselves, JSON or YAML) and 2xx answers name their models,
    so a client or a fuzzer knows them: no route answers a bare ``object``."""
    document = await schema(api)
    paths = document["paths"]
    bodies = {
        ("post", "/v1/jobs"): ["JobManifest-Input", "JobBatch-Input"],
        ("put", "/v1/queues"): ["QueueConfig-Input"],
        ("post", "/v1/clusters/join"): [],
        ("post", "/v1/clusters/{name}/report"): ["NodeReport-Input", "StatusUpdate-Input"],
        ("post", "/v1/tokens"): [],
        ("post", "/v1/tenants/{name}/tokens"): [],
        ("post", "/v1/clusters/{name}/tokens"): [],
        ("patch", "/v1/jobs/{job_id}"): [],
        ("post", "/v1/jobs/actions"): [],
    }
    for (method, path), models in bodies.items():
        content = paths[path][method]["requestBody"]["content"]
        assert set(content) == {"application/json", "application/yaml"}, (method, path)
        assert "$defs" not in content["application/json"]["schema"]
        for model in models:
            assert model in document["components"]["schemas"], model
    assert {
        ref["$ref"]
        for ref in paths["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]["anyOf"]
    } == {
        "#/components/schemas/JobManifest-Input",
        "#/components/schemas/JobBatch-Input",
    }
    for path, operations in paths.items():
        for method, operation in operations.items():
            ok = next(status for status in operation["responses"] if status.startswith("2"))
            answer = operation["responses"][ok]["content"]
            if path != "/metrics":
                assert set(answer["application/json"]["schema"]) == {"$ref"}, (method, path)
