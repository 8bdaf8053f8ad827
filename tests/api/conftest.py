"""An API over the in-memory store, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from federation.api.app import create_app
from federation.auth import Role
from federation.config import FederationConfig
from federation.store import MemoryStore
from policies.clock import ManualClock
from tests.api.support import ADMIN, Api

QUEUES = {
    "queues": [
        {
            "name": "research",
            "weight": 2,
            "guarantee": {"cpu": 8},
            "children": [
                {"name": "vision", "tenants": ["alice", "bob"]},
                {"name": "nlp", "tenants": ["carol"]},
            ],
        },
        {"name": "scratch", "children": [{"name": "default"}]},
    ]
}


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    clock = ManualClock(1_700_000_000.0)
    store = MemoryStore(clock=clock)
    config = FederationConfig.model_validate(
        {"api": {"maxBodyBytes": 65536, "maxArrayCount": 100, "maxJobsPerRequest": 50}}
    )
    app = create_app(store, admin_token=ADMIN, config=config, clock=clock)
    tokens = {"admin": ADMIN}
    state = app.state.fedq
    for tenant in ("alice", "bob", "carol"):
        tokens[tenant] = await state.tokens.issue(Role.TENANT, tenant)
    tokens["expired"] = await state.tokens.issue(Role.TENANT, "alice", expires_at=clock.now() - 1)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fedq") as http:
        response = await http.put("/v1/queues", json=QUEUES, headers={"Authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 200, response.text
        yield Api(http, store, clock, tokens)
    await store.close()
