"""The FastAPI application: ``create_app`` wires a store, a clock and a config into the routes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from federation.api import (
    routes_actions,
    routes_admin,
    routes_clusters,
    routes_history,
    routes_jobs,
    routes_logs,
    routes_reports,
    routes_tokens,
    routes_watch,
)
from federation.api.admission import Admission
from federation.api.deps import Caller
from federation.api.errors import ERROR_RESPONSES, install_error_handlers
from federation.api.schema import DocumentedApp
from federation.api.state import ApiMetrics, QueueTreeCache, ServerState
from federation.api.views import Health
from federation.audit import AuditLog
from federation.auth import Role, TokenStore
from federation.clusters import ClusterService
from federation.config import FederationConfig
from federation.index_counts import IndexCounts
from federation.joblogs.intake import LogIntake
from federation.joblogs.retention import sweep_forever
from federation.joblogs.store import LogStore
from federation.jobs import JobRepository
from federation.models import QueueTreeConfig
from federation.quotas import QuotaLedger, StoreBudget
from federation.store import Store
from federation.submits import Submits
from federation.tenant_index import ensure_tenant_index
from federation.ui import routes as ui
from federation.waits import StatusCache
from federation.watch import Hubs, WatchLimiter
from policies.clock import Clock, SystemClock

_SILENT = {"ok": False, "failures": 0, "error": "the scheduler did not answer", "since": None, "last_good": None}


def create_app(
    store: Store,
    *,
    admin_token: str,
    config: FederationConfig | None = None,
    clock: Clock | None = None,
    queues: QueueTreeConfig | None = None,
) -> FastAPI:
    """Build the API over ``store``; ``queues``, when given, is applied at start-up."""
    clock = clock or SystemClock()
    config = config or FederationConfig()
    tokens = TokenStore(store, clock, admin_token, bootstrap_ttl=config.auth.token_ttl)
    jobs = JobRepository(store)
    logs = LogStore(None if config.logs.dir is None else Path(config.logs.dir), config.logs.max_bytes_per_job)
    clusters = ClusterService(
        store, jobs, tokens, clock, config.jobs, config.cluster, LogIntake(store, logs, config.logs, clock)
    )
    state = ServerState(
        store=store,
        config=config,
        clock=clock,
        tokens=tokens,
        jobs=jobs,
        queues=QueueTreeCache(store),
        clusters=clusters,
        admission=Admission(clusters, clock),
        metrics=ApiMetrics(),
        audit=AuditLog(config.audit.log, clock),
        budget=StoreBudget(store, clock, config.store.budget_bytes),
        usage=QuotaLedger(store, clock),
        submits=Submits(store, clock),
        watches=WatchLimiter(config.api.max_watches_per_tenant, config.api.max_streams),
        hubs=Hubs(store),
        logs=logs,
        status=StatusCache(store),
        counts=IndexCounts(store),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await ensure_tenant_index(store)
        if queues is not None:
            await state.queues.apply(queues)
        sweeper = asyncio.create_task(sweep_forever(store, logs))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            await state.counts.close()
            await tokens.close()

    app = DocumentedApp(title="fedq", version="0.1.0", lifespan=lifespan)
    app.state.fedq = state
    install_error_handlers(app)
    app.include_router(routes_watch.router)
    app.include_router(routes_logs.router)
    app.include_router(routes_jobs.router)
    app.include_router(routes_actions.router)
    app.include_router(routes_admin.router)
    app.include_router(routes_tokens.router)
    app.include_router(routes_clusters.router)
    app.include_router(routes_reports.router)
    app.include_router(routes_history.router)
    ui.mount(app)
    quota_metrics = routes_reports.register_metrics(state)

    app.add_middleware(Observed, metrics=state.metrics)

    @app.get("/healthz", tags=["health"], response_model=Health)
    async def healthz() -> dict[str, object]:
        """``leader``: whether this replica's scheduler leads; ``scheduler``: whether its loop gets through
        its turns (both None when it runs no scheduler). ``ok`` is false while that loop is failing, or
        did not answer: the API still serves (so 200), but nothing is scheduled by this replica."""
        scheduler = getattr(app.state, "scheduler", None)
        revision = await store.revision()
        if scheduler is None:
            return {"ok": True, "revision": revision, "leader": None, "scheduler": None}
        status = await scheduler.status()
        health = status.health if status.health is not None else _SILENT
        return {"ok": bool(health["ok"]), "revision": revision, "leader": status.leads, "scheduler": health}

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse, responses=ERROR_RESPONSES)
    async def metrics(who: Caller) -> Response:
        """Any token scrapes the API's and the scheduler's series; the per-tenant and per-queue usage
        series (who used what, RUP and EUP) only an admin or a metrics token."""
        text = generate_latest(state.metrics.registry)
        scheduler = getattr(app.state, "scheduler", None)
        if scheduler is not None:
            text += (await scheduler.status(metrics=True)).metrics
        if who.role in (Role.ADMIN, Role.METRICS):
            await quota_metrics.refresh()  # from the store, at most every 10 s
            text += generate_latest(state.metrics.usage)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    return app


class Observed:
    """Each request's latency to its answer's start, by route, and each 4xx by status. Plain ASGI: an
    ``@app.middleware`` costs a task and a stream per request, paid by every agent's report."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start":
                route = getattr(scope.get("route"), "path", "unmatched")
                self.metrics.latency.labels(route=route).observe(time.perf_counter() - started)
                if 400 <= message["status"] < 500:
                    self.metrics.rejected.labels(status=str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, answer)
