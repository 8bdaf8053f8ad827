"""An API over the in-memory store (or either backend: ``api_on``), driven in-process through httpx's ASGI
transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx
import pytest

from federation.api.app import create_app
from federation.auth import Role
from federation.config import FederationConfig
from federation.store import MemoryStore, Store
from policies.clock import ManualClock
from tests.api.support import ADMIN, Api, InProcess

START = 1_700_000_000.0
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


@asynccontextmanager
async def serving(
    store: Store,
    clock: ManualClock,
    limits: dict[str, object] | None = None,
    jobs: dict[str, object] | None = None,
    sections: dict[str, object] | None = None,
) -> AsyncIterator[Api]:
    """The API over ``store`` with the test tree applied and a token per tenant; ``limits`` adds to ``api:``,
    ``jobs`` is the ``jobs:`` section and ``sections`` any others (``auth``, ``audit``)."""
    config = FederationConfig.model_validate(
        {
            "api": {"maxBodyBytes": 65536, "maxArrayCount": 100, "maxJobsPerRequest": 50, **(limits or {})},
            "jobs": jobs or {},
            **(sections or {}),
        }
    )
    app = create_app(store, admin_token=ADMIN, config=config, clock=clock)
    tokens = {"admin": ADMIN}
    state = app.state.fedq
    for tenant in ("alice", "bob", "carol"):
        tokens[tenant] = await state.tokens.issue(Role.TENANT, tenant)
    tokens["expired"] = await state.tokens.issue(Role.TENANT, "alice", expires_at=clock.now() - 1)
    transport = InProcess(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fedq") as http:
        response = await http.put("/v1/queues", json=QUEUES, headers={"Authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 200, response.text
        yield Api(http, store, clock, tokens, app)


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    async with serving(store, clock) as served:
        yield served
    await store.close()


ApiFactory = Callable[..., AbstractAsyncContextManager[Api]]


@pytest.fixture
def api_on(store: Store) -> ApiFactory:
    """``async with api_on(**limits) as api``: the API over each backend (memory, and real etcd with
    small range pages), with API limits of the test's own (and ``jobs``, the ``jobs:`` section, and
    ``sections``, any others)."""

    def make(
        jobs: dict[str, object] | None = None, sections: dict[str, object] | None = None, **limits: object
    ) -> AbstractAsyncContextManager[Api]:
        return serving(store, ManualClock(START), limits, jobs, sections)

    return make
