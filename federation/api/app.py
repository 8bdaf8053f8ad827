"""The FastAPI application: ``create_app`` wires a store, a clock and a config into the routes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from federation.api import (
    routes_actions,
    routes_admin,
    routes_clusters,
    routes_jobs,
    routes_logs,
    routes_reports,
    routes_tokens,
    routes_watch,
)
from federation.api.deps import Caller
from federation.api.errors import ERROR_RESPONSES, install_error_handlers
from federation.api.schema import DocumentedApp
from federation.api.state import ApiMetrics, QueueTreeCache, ServerState
from federation.api.views import Health
from federation.audit import AuditLog
from federation.auth import Role, TokenStore
from federation.clusters import ClusterService
from federation.config import FederationConfig
from federation.joblogs.intake import LogIntake
from federation.joblogs.retention import sweep_forever
from federation.joblogs.store import LogStore
from federation.jobs import JobRepository
from federation.models import QueueTreeConfig
from federation.quotas import QuotaLedger, StoreBudget
from federation.store import Store
from federation.submits import Submits
from federation.ui import routes as ui
from federation.watch import Hubs, WatchLimiter
from policies.clock import Clock, SystemClock


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
    state = ServerState(
        store=store,
        config=config,
        clock=clock,
        tokens=tokens,
        jobs=jobs,
        queues=QueueTreeCache(store),
        clusters=ClusterService(
            store, jobs, tokens, clock, config.jobs, config.cluster, LogIntake(store, logs, config.logs, clock)
        ),
        metrics=ApiMetrics(),
        audit=AuditLog(config.audit.log, clock),
        budget=StoreBudget(store, clock, config.store.budget_bytes),
        usage=QuotaLedger(store, clock),
        submits=Submits(store, clock),
        watches=WatchLimiter(config.api.max_watches_per_tenant, config.api.max_streams),
        hubs=Hubs(store),
        logs=logs,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if queues is not None:
            await state.queues.apply(queues)
        sweeper = asyncio.create_task(sweep_forever(store, logs))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

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
    ui.mount(app)
    quota_metrics = routes_reports.register_metrics(state)

    @app.middleware("http")
    async def _observe(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        state.metrics.latency.labels(route=getattr(route, "path", "unmatched")).observe(time.perf_counter() - started)
        if 400 <= response.status_code < 500:
            state.metrics.rejected.labels(status=str(response.status_code)).inc()
        return response

    @app.get("/healthz", tags=["health"], response_model=Health)
    async def healthz() -> dict[str, object]:
        """``leader``: whether this replica's scheduler leads (None when it runs no scheduler)."""
        scheduler = getattr(app.state, "scheduler", None)
        leader = None if scheduler is None else (await scheduler.status()).leads
        return {"ok": True, "revision": await store.revision(), "leader": leader}

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
