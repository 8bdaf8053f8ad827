"""Shared pieces of the API tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from federation.jobs import JobRepository
from federation.models import JobState
from federation.store import Store
from policies.clock import ManualClock

ADMIN = "fedq_admin_test-admin-token"


@dataclass
class Api:
    http: httpx.AsyncClient
    store: Store
    clock: ManualClock
    tokens: dict[str, str]

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


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
            await repository.transition(await repository.get(job_id), target, now=api.clock.now())
            jobs[job_id]["state"] = target.value
    return jobs
