"""Shared pieces of the API tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from federation.jobs import JobRepository
from federation.models import JobState
from federation.store import Store
from policies.clock import ManualClock
from tests import jobflow

ADMIN = "fedq_admin_test-admin-token"


class InProcess(httpx.ASGITransport):
    """The app in the test's own event loop, each request giving the loop a turn first, as a request over
    a network does (its bytes arrive in a later turn). Without it, a request the app answers from memory
    (a 429 from a full gate, a token from the replica's copy) never suspends, and a client that sends
    such requests back to back holds the loop: nothing else, not the other clients, not the scheduler
    beside the app, runs until it stops."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0)
        return await super().handle_async_request(request)


@dataclass
class Api:
    http: httpx.AsyncClient
    store: Store
    clock: ManualClock
    tokens: dict[str, str]
    app: Any = None
    """The ASGI app, for tests that serve it over a socket (streams: httpx's ASGI transport buffers whole answers)."""

    def auth(self, who: str) -> dict[str, str]:
        return bearer(self.tokens[who])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


NODE = {"name": "n1", "allocatable": {"cpu": 8, "memory": "32Gi"}, "free": {"cpu": 8, "memory": "32Gi"}}


async def join(api: Api, name: str, *, labels: dict[str, str] | None = None, backend: str = "simulated") -> str:
    """Join cluster ``name`` (labels ``region: eu`` unless given); returns its credential."""
    token = (await api.http.post(f"/v1/clusters/{name}/tokens", headers=api.auth("admin"))).json()["token"]
    body = {"token": token, "name": name, "labels": {"region": "eu"} if labels is None else labels, "backend": backend}
    response = await api.http.post("/v1/clusters/join", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["credential"])


async def report(api: Api, name: str, credential: str, **body: Any) -> Any:
    """A report from ``name``: one node ``NODE`` unless ``nodes`` is given; returns the reply."""
    response = await api.http.post(
        f"/v1/clusters/{name}/report", json={"nodes": [NODE], **body}, headers={"Authorization": f"Bearer {credential}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def dispatch(api: Api, job_id: str, cluster: str) -> int:
    """What the global scheduler does: Pending -> Dispatched(cluster, epoch+1) plus the assignment key."""
    return await jobflow.dispatch(JobRepository(api.store), job_id, cluster, api.clock.now())


def job_spec(name: str = "train", **spec: object) -> dict[str, object]:
    body: dict[str, object] = {
        "queue": "research.vision",
        "walltime": "1h",
        "tasks": [{"name": "worker", "replicas": 2, "resources": {"cpu": "2", "memory": "4Gi"}}],
    }
    body.update(spec)
    return {"apiVersion": "fedq/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


SUBMITTED = {
    "alice": [("research.vision", 9)],
    "bob": [("research.vision", 6), ("scratch.default", 5)],
    "carol": [("research.nlp", 4), ("scratch.default", 8)],
}


async def populate(api: Api) -> dict[str, dict[str, Any]]:
    """Submit ``SUBMITTED``; every third job goes Running and every fifth Succeeded. Returns each job's
    (id, tenant, queue, state) by id."""
    jobs: dict[str, dict[str, Any]] = {}
    for tenant, batches in SUBMITTED.items():
        for queue, count in batches:
            body = {"jobs": [job_spec(f"{tenant}-{n}", queue=queue) for n in range(count)]}
            response = await api.http.post("/v1/jobs", json=body, headers=api.auth(tenant))
            assert response.status_code == 201, response.text
            for job_id in response.json()["ids"]:
                jobs[job_id] = {"id": job_id, "tenant": tenant, "queue": queue, "state": "Pending"}
    repository = JobRepository(api.store)
    for number, job_id in enumerate(sorted(jobs)):
        target = JobState.SUCCEEDED if number % 5 == 0 else JobState.RUNNING if number % 3 == 0 else None
        if target is not None:
            await jobflow.advance(repository, job_id, target, api.clock.now())
            jobs[job_id]["state"] = target.value
    return jobs
