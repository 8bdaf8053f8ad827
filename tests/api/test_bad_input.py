"""Every kind of bad input gets a 4xx whose message names the problem, and writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from federation import keys
from federation.store import MemoryStore
from policies.clock import ManualClock
from tests.api.conftest import QUEUES, START, serving
from tests.api.support import Api, job_spec


def with_spec(**changes: Any) -> dict[str, Any]:
    return job_spec(**changes)


def with_task(**changes: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"name": "worker", "replicas": 2, "resources": {"cpu": "2"}}
    task.update(changes)
    return job_spec(tasks=[task])


# (case id, who, method, path, body (dict → JSON, str/bytes → raw), status, text the message must contain)
CASES: list[tuple[str, str | None, str, str, Any, int, str]] = [
    ("malformed-json", "alice", "POST", "/v1/jobs", b'{"apiVersion": "fedq/v1", "metadata": {', 400, "malformed JSON"),
    ("malformed-yaml", "alice", "POST", "/v1/jobs", "yaml:\n  - [unclosed", 400, "malformed YAML"),
    ("empty-body", "alice", "POST", "/v1/jobs", b"", 400, "body is empty"),
    ("not-an-object", "alice", "POST", "/v1/jobs", [1, 2, 3], 422, "job spec object"),
    (
        "unknown-queue",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(queue="research.robots"),
        422,
        "unknown queue 'research.robots': tenant 'alice' may submit to research.vision, scratch.default",
    ),
    ("non-leaf-queue", "alice", "POST", "/v1/jobs", with_spec(queue="research"), 422, "not a leaf queue"),
    ("unknown-field", "alice", "POST", "/v1/jobs", with_spec(gpus=4), 422, "spec.gpus"),
    (
        "misspelt-field",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(walltme="1h"),
        422,
        "spec.walltme: unknown field 'walltme' (did you mean 'walltime'?)",
    ),
    (
        "misspelt-task-field",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(comand=["true"]),
        422,
        "spec.tasks[0].comand: unknown field 'comand' (did you mean 'command'?)",
    ),
    (
        "tenant-in-spec",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(tenant="bob"),
        422,
        "spec.tenant: the tenant comes from your token, not the spec",
    ),
    ("zero-replicas", "alice", "POST", "/v1/jobs", with_task(replicas=0), 422, "spec.tasks[0].replicas"),
    ("negative-replicas", "alice", "POST", "/v1/jobs", with_task(replicas=-2), 422, "spec.tasks[0].replicas"),
    ("min-available-over-replicas", "alice", "POST", "/v1/jobs", with_spec(minAvailable=3), 422, "minAvailable (3)"),
    (
        "unparseable-quantity",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(resources={"memory": "4 gigs"}),
        422,
        "invalid quantity '4 gigs'",
    ),
    ("negative-quantity", "alice", "POST", "/v1/jobs", with_task(resources={"cpu": -1}), 422, "must not be negative"),
    (
        "bad-resource-name",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(resources={"gpu!!": 1}),
        422,
        "invalid resource name 'gpu!!'",
    ),
    (
        "gpu-named-twice",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(resources={"gpu": 1, "nvidia.com/gpu": 1}),
        422,
        "resource 'nvidia.com/gpu' is given twice ('gpu' is another name for it)",
    ),
    (
        "unparseable-walltime",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(walltime="a while"),
        422,
        "invalid duration 'a while'",
    ),
    (
        "bad-job-name",
        "alice",
        "POST",
        "/v1/jobs",
        {**job_spec(), "metadata": {"name": "Bad Name"}},
        422,
        "invalid job name",
    ),
    ("wrong-kind", "alice", "POST", "/v1/jobs", {**job_spec(), "kind": "Deployment"}, 422, "kind"),
    (
        "array-over-limit",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(array={"count": 101}),
        422,
        "array count 101 is over the limit of 100",
    ),
    ("too-many-jobs", "alice", "POST", "/v1/jobs", {"jobs": [job_spec()] * 51}, 413, "limit is 50"),
    ("empty-bulk", "alice", "POST", "/v1/jobs", {"jobs": []}, 422, "non-empty list"),
    (
        "one-bad-job-in-bulk",
        "alice",
        "POST",
        "/v1/jobs",
        {"jobs": [job_spec(), with_task(replicas=0)]},
        422,
        "jobs[1].spec.tasks[0].replicas",
    ),
    ("oversized-body", "alice", "POST", "/v1/jobs", b"{" + b" " * 70000 + b"}", 413, "over the limit of 65536 bytes"),
    ("missing-token", None, "POST", "/v1/jobs", job_spec(), 401, "missing bearer token"),
    ("wrong-token", "nobody", "POST", "/v1/jobs", job_spec(), 401, "unknown token: check --token or FEDQ_TOKEN"),
    ("expired-token", "expired", "POST", "/v1/jobs", job_spec(), 401, "ask an admin for a new one"),
    (
        "queue-not-allowed",
        "carol",
        "POST",
        "/v1/jobs",
        job_spec(),
        403,
        "may not submit to queue 'research.vision'; tenant 'carol' may submit to research.nlp, scratch.default",
    ),
    (
        "submit-as-other-tenant",
        "alice",
        "POST",
        "/v1/jobs?tenant=bob",
        job_spec(),
        403,
        "cannot submit as tenant 'bob'",
    ),
    ("admin-without-tenant", "admin", "POST", "/v1/jobs", job_spec(), 422, "must name the tenant"),
    ("tenant-applies-queues", "alice", "PUT", "/v1/queues", {"queues": [{"name": "x"}]}, 403, "needs an admin token"),
    (
        "invalid-queue-tree",
        "admin",
        "PUT",
        "/v1/queues",
        {"queues": [{"name": "x", "weight": -1}]},
        422,
        "queues[0].weight",
    ),
    (
        "queue-weight-infinity",
        "admin",
        "PUT",
        "/v1/queues",
        b'{"queues": [{"name": "x", "weight": Infinity}]}',
        422,
        "queues[0].weight",
    ),
    ("queue-weight-nan", "admin", "PUT", "/v1/queues", b'{"queues": [{"name": "x", "weight": NaN}]}', 422, "finite"),
    ("queue-weight-huge", "admin", "PUT", "/v1/queues", {"queues": [{"name": "x", "weight": 1e300}]}, 422, "1000000"),
    (
        "queue-priority-factor-true",
        "admin",
        "PUT",
        "/v1/queues",
        {"queues": [{"name": "x", "priorityFactor": True}]},
        422,
        "queues[0].priorityFactor: must be a number, not the boolean true",
    ),
    (
        "queue-guarantee-1e308",
        "admin",
        "PUT",
        "/v1/queues",
        {"queues": [{"name": "x", "guarantee": {"cpu": 1e308}}]},
        422,
        "resource 'cpu': quantity must be at most 2^63",
    ),
    (
        "queue-cap-infinity-yaml",
        "admin",
        "PUT",
        "/v1/queues",
        "queues: [{name: x, cap: {memory: .inf}}]",
        422,
        "resource 'memory': quantity must be finite",
    ),
    (
        "queue-half-life-inf",
        "admin",
        "PUT",
        "/v1/queues",
        {"queues": [{"name": "x", "halfLife": "inf"}]},
        422,
        "queues[0].halfLife: duration must be finite",
    ),
    (
        "replicas-true",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(replicas=True),
        422,
        "spec.tasks[0].replicas: must be a number, not the boolean true",
    ),
    ("priority-true", "alice", "POST", "/v1/jobs", with_spec(priority=True), 422, "spec.priority: must be a number"),
    ("array-count-true", "alice", "POST", "/v1/jobs", with_spec(array={"count": True}), 422, "spec.array.count"),
    (
        "max-retries-false",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(maxRetries=False),
        422,
        "spec.maxRetries: must be a number, not the boolean false",
    ),
    (
        "cpu-1e308",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(resources={"cpu": 1e308}),
        422,
        "spec.tasks[0].resources: resource 'cpu': quantity must be at most 2^63",
    ),
    (
        "memory-as-huge-string",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(resources={"memory": "1e300"}),
        422,
        "resource 'memory': quantity must be at most 2^63",
    ),
    (
        "walltime-inf",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(walltime="inf"),
        422,
        "spec.walltime: duration must be finite",
    ),
    (
        "walltime-1e400",
        "alice",
        "POST",
        "/v1/jobs",
        json.dumps(job_spec()).replace('"1h"', "1e400").encode(),
        422,
        "spec.walltime: duration must be finite",
    ),
    (
        "walltime-over-100-years",
        "alice",
        "POST",
        "/v1/jobs",
        with_spec(walltime="40000d"),
        422,
        "spec.walltime: duration must be at most 36500d",
    ),
    (
        "runtime-nan",
        "alice",
        "POST",
        "/v1/jobs",
        with_task(runtime="nan"),
        422,
        "spec.tasks[0].runtime: duration must be finite",
    ),
    ("ttl-huge-yaml-int", "admin", "POST", "/v1/clusters/east/tokens", "ttl: 1" + "0" * 400, 422, "finite"),
    ("json-nested-30k-deep", "alice", "POST", "/v1/jobs", b"[" * 30000 + b"]" * 30000, 400, "deeper than 64 levels"),
    (
        "json-nested-65-deep",
        "admin",
        "PUT",
        "/v1/queues",
        b'{"queues": ' + b"[" * 64 + b"]" * 64 + b"}",
        400,
        "nests deeper than 64 levels (api.maxDepth)",
    ),
    ("yaml-nested-30k-deep", "alice", "POST", "/v1/jobs", "[" * 30000 + "]" * 30000, 400, "deeper than 64 levels"),
    (
        "yaml-nested-65-deep",
        "alice",
        "POST",
        "/v1/jobs",
        "spec:\n  tasks: " + "[" * 63 + "]" * 63,
        400,
        "deeper than 64 levels (api.maxDepth) at spec.tasks" + "[0]" * 62,
    ),
    ("yaml-30k-unclosed", "alice", "POST", "/v1/jobs", "[" * 30000, 400, "deeper than 64 levels"),
    ("yaml-alias-of-itself", "alice", "POST", "/v1/jobs", "&loop [*loop]", 400, "deeper than 64 levels"),
    (
        "yaml-aliases-expand",
        "admin",
        "PUT",
        "/v1/queues",
        "big: &big " + "x" * 1000 + "\nqueues: [" + ", ".join(["*big"] * 100) + "]",
        413,
        "over the limit of 65536 bytes once its YAML aliases are written out",
    ),
    ("json-integer-5000-digits", "alice", "POST", "/v1/jobs", b'{"x": ' + b"1" * 5000 + b"}", 400, "malformed JSON"),
    ("yaml-integer-5000-digits", "alice", "POST", "/v1/jobs", "x: " + "1" * 5000, 400, "malformed YAML"),
    ("tenant-makes-tokens", "alice", "POST", "/v1/tenants/alice/tokens", None, 403, "needs an admin token"),
    ("bad-tenant-name", "admin", "POST", "/v1/tenants/Not%20OK/tokens", None, 422, "invalid tenant name"),
    ("unknown-job", "alice", "GET", "/v1/jobs/nosuchjob", None, 404, "not found (finished jobs are removed 7d after"),
    ("bad-state-filter", "alice", "GET", "/v1/jobs?state=Sleeping", None, 422, "state"),
    ("list-other-tenant", "alice", "GET", "/v1/jobs?tenant=bob", None, 403, "cannot list jobs of tenant 'bob'"),
    ("hold-unknown-job", "alice", "POST", "/v1/jobs/nosuchjob/hold", None, 404, "not found"),
    ("update-unknown-job", "alice", "PATCH", "/v1/jobs/nosuchjob", {"priority": 1}, 404, "not found"),
    ("update-not-an-object", "alice", "PATCH", "/v1/jobs/nosuchjob", [1], 422, "update"),
    ("actions-not-an-object", "alice", "POST", "/v1/jobs/actions", "- hold", 422, "action"),
    ("actions-unknown-action", "alice", "POST", "/v1/jobs/actions", {"action": "pause", "ids": ["x"]}, 422, "action"),
    ("actions-empty-ids", "alice", "POST", "/v1/jobs/actions", {"action": "hold", "ids": []}, 422, "ids"),
]


@pytest.mark.parametrize(("case", "who", "method", "path", "body", "status", "text"), CASES, ids=[c[0] for c in CASES])
async def test_bad_input_is_refused_and_changes_nothing(
    api: Api, case: str, who: str | None, method: str, path: str, body: Any, status: int, text: str
) -> None:
    headers = {} if who is None else {"Authorization": f"Bearer {api.tokens.get(who, 'fedq_tenant_made-up')}"}
    if isinstance(body, bytes | str):
        content = body.encode() if isinstance(body, str) else body
        if isinstance(body, str):
            headers["Content-Type"] = "application/yaml"
    else:
        content = None if body is None else json.dumps(body).encode()
    before = await api.store.revision()
    response = await api.http.request(method, path, content=content, headers=headers)
    assert response.status_code == status, response.text
    assert text in response.json()["error"] or any(text in f["field"] for f in response.json()["fields"]), response.text
    assert await api.store.revision() == before, f"{case} wrote to the store"


async def test_cancelling_another_tenants_job_is_refused_and_changes_nothing(api: Api) -> None:
    job_id = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("bob"))).json()["id"]
    before = await api.store.revision()
    response = await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))
    assert response.status_code == 403
    assert "belongs to another tenant" in response.json()["error"]
    assert await api.store.revision() == before
    assert (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("bob"))).json()["state"] == "Pending"


async def test_cancelling_a_finished_job_is_a_conflict(api: Api) -> None:
    job_id = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).json()["id"]
    assert (await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).status_code == 200
    before = await api.store.revision()
    response = await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))
    assert response.status_code == 409
    assert "already finished (Cancelled)" in response.json()["error"]
    assert await api.store.revision() == before


async def test_a_queue_with_jobs_cannot_be_removed(api: Api) -> None:
    await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))
    before = await api.store.revision()
    response = await api.http.put("/v1/queues", json={"queues": [{"name": "other"}]}, headers=api.auth("admin"))
    assert response.status_code == 409
    assert "research.vision" in response.json()["error"]
    assert await api.store.revision() == before


async def test_a_stored_tree_that_fails_the_checks_is_a_503_naming_the_repair(api: Api) -> None:
    """A tree written before today's checks (an infinite weight was stored as null) breaks no route with a
    500: readers answer 503 saying to apply a tree, and applying one repairs it."""
    await api.store.put(keys.QUEUES, b'{"queues": [{"name": "x", "weight": null}]}')
    for path in ("/v1/queues", "/v1/reports/quota"):
        response = await api.http.get(path, headers=api.auth("admin"))
        assert response.status_code == 503, response.text
        assert "stored queue tree cannot be read (queues[0].weight" in response.json()["error"]
        assert "PUT /v1/queues" in response.json()["error"]
    submitted = await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))
    assert submitted.status_code == 503
    applied = await api.http.put("/v1/queues", json=QUEUES, headers=api.auth("admin"))
    assert applied.status_code == 200, applied.text
    assert (await api.http.get("/v1/queues", headers=api.auth("alice"))).status_code == 200


async def test_half_a_megabyte_of_yaml_may_not_stand_for_ten() -> None:
    """Under the default limits (8 MiB bodies), 0.5 MB of YAML whose aliases expand to 10 MB is refused."""
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    bomb = "big: &big " + "x" * 500_000 + "\nqueues: [" + ", ".join(["*big"] * 20) + "]"
    async with serving(store, clock, {"maxBodyBytes": 8 * 1024 * 1024}) as api:
        before = await api.store.revision()
        headers = {**api.auth("admin"), "Content-Type": "application/yaml"}
        response = await api.http.put("/v1/queues", content=bomb, headers=headers)
        assert response.status_code == 413, response.text
        assert "over the limit of 8388608 bytes once its YAML aliases are written out" in response.json()["error"]
        assert await api.store.revision() == before


async def test_the_depth_limit_is_the_configured_one() -> None:
    """``api.maxDepth: 8``: a job spec (5 deep) is taken, a queue tree of four levels (9 deep) is refused."""
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    deep = {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": [{"name": "d"}]}]}]}
    async with serving(store, clock, {"maxDepth": 8}) as api:
        assert (
            await api.http.post("/v1/jobs?allowUnschedulable=true", json=job_spec(), headers=api.auth("alice"))
        ).status_code == 201
        before = await api.store.revision()
        response = await api.http.put("/v1/queues", json={"queues": [deep]}, headers=api.auth("admin"))
        assert response.status_code == 400, response.text
        assert "deeper than 8 levels" in response.json()["error"]
        assert await api.store.revision() == before
