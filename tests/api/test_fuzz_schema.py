"""schemathesis against the app in-process (memory store), bodies included, as an admin and as a tenant:
no answer is a 5xx, and every answer is one the OpenAPI document declares (status, content type and
schema); the report call also as its own cluster. Bounded: ``EXAMPLES`` cases per operation and token, about 35 s
on two shared cores."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from federation.api.app import create_app
from federation.store import MemoryStore
from policies.clock import ManualClock
from tests.api.conftest import QUEUES, START
from tests.api.support import ADMIN, bearer, job_spec

EXAMPLES = 20
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


APP = create_app(MemoryStore(clock=ManualClock(START)), admin_token=ADMIN, clock=ManualClock(START))
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
OPERATIONS = [(method.upper(), path) for path, ops in APP.openapi()["paths"].items() for method in ops]


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    """The test tree, a tenant token, a job and a joined cluster, so that routes have something to answer
    about; set up through schemathesis's own ASGI client, whose event loop every call shares."""
    admin = bearer(ADMIN)
    with asgi.get_client(APP) as client:
        assert client.put("/v1/queues", json=QUEUES, headers=admin).status_code == 200
        tenant = client.post("/v1/tenants/alice/tokens", headers=admin).json()["token"]
        submitted = client.post("/v1/jobs?allowUnschedulable=true", json=job_spec(), headers=bearer(tenant))
        assert submitted.status_code == 201, submitted.text
        join = client.post("/v1/clusters/east/tokens", headers=admin).json()["token"]
        joined = client.post("/v1/clusters/join", json={"token": join, "name": "east"})
        assert joined.status_code == 201, joined.text
    return {"admin": ADMIN, "alice": tenant, "east": joined.json()["credential"]}


@pytest.mark.parametrize("who", ["admin", "alice"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_answer_is_declared_and_none_is_a_5xx(tokens: dict[str, str], who: str, method: str, path: str) -> None:
    headers = bearer(tokens[who])

    @given(case=SCHEMA[path][method].as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def calls(case: Any) -> None:
        if case.query and "watch" in case.query:
            case.query["watch"] = "false"  # a stream never ends: its one-shot answer and refusals are fuzzed
        case.call_and_validate(headers=headers, checks=CHECKS)

    calls()


def test_reports_from_a_cluster_are_declared_and_never_a_5xx(tokens: dict[str, str]) -> None:
    """The report call as its own cluster, so that its bodies get past the credential check."""
    headers = bearer(tokens["east"])

    @given(case=SCHEMA["/v1/clusters/{name}/report"]["POST"].as_strategy())
    @settings(max_examples=4 * EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def calls(case: Any) -> None:
        case.path_parameters = {"name": "east"}
        case.call_and_validate(headers=headers, checks=CHECKS)

    calls()
