"""Shared pieces of the API tests."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

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
