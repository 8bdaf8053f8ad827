"""The API with the reports router over the scenario (scenario.py), on the memory store and real etcd.

The accounting is saved by an Accountant as the scheduler would, jobs are written through the
JobRepository, and capacity comes from two clusters' reports (east 60 cores, west 40).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI

from federation import keys
from federation.api import routes_reports
from federation.api.app import create_app
from federation.auth import Role
from federation.config import FederationConfig
from federation.jobs import JobRepository
from federation.models.cluster import ClusterRecord, ClusterReport, NodeReport
from federation.store import Store
from policies.clock import ManualClock
from tests.reports.scenario import NOW, QUEUES, T0, accountant, jobs

ADMIN = "fedq_admin_reports-test-token"
NODES = {"east": {"cpu": 30.0}, "west": {"cpu": 20.0}}  # two nodes each: 60 + 40 = 100 cores


@dataclass
class ReportsApi:
    app: FastAPI
    http: httpx.AsyncClient
    store: Store
    clock: ManualClock
    tokens: dict[str, str]

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def with_reports(app: FastAPI) -> FastAPI:
    """Mount the router unless create_app already does (once the lead has wired it in)."""
    if not any(getattr(route, "path", "") == "/v1/reports/quota" for route in app.routes):
        app.include_router(routes_reports.router)
    return app


@pytest.fixture
async def reports_api(store: Store) -> AsyncIterator[ReportsApi]:
    clock = ManualClock(T0)
    await accountant(clock).save(store)  # the scheduler's save, an hour before the reads
    clock.set(NOW)
    config = FederationConfig.model_validate({"fairshare": {"halfLife": "1d"}})
    app = with_reports(create_app(store, admin_token=ADMIN, config=config, clock=clock))
    state = app.state.fedq
    await JobRepository(store).create(jobs())
    for name, per_node in NODES.items():
        await store.put(keys.cluster(name), ClusterRecord(name=name, joined_at=T0).model_dump_json().encode())
        node = NodeReport(name=f"{name}-n", count=2, allocatable=per_node, free={})
        await state.clusters.report(name, ClusterReport(nodes=[node]))
    tokens = {"admin": ADMIN, "cluster": await state.tokens.issue(Role.CLUSTER, "east")}
    for tenant in ("alice", "bob", "newbie"):
        tokens[tenant] = await state.tokens.issue(Role.TENANT, tenant)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fedq") as http:
        applied = await http.put("/v1/queues", json=QUEUES, headers={"Authorization": f"Bearer {ADMIN}"})
        assert applied.status_code == 200, applied.text
        yield ReportsApi(app, http, store, clock, tokens)
