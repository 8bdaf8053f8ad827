"""``/v1/reports``: quota reports and the userprio view, and the per-tenant Prometheus metrics.

Everything is read from the store (the accounting the scheduler saves, job records, cluster
reports), so any API replica serves the same report. A tenant token sees only its own rows; a
cluster credential sees none.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel

from federation.accounting import AccountingSnapshot
from federation.api.deps import Caller, State
from federation.api.errors import ERROR_RESPONSES, ApiError
from federation.api.state import ServerState
from federation.auth import Principal, Role
from federation.models import QueueTree
from federation.reports.facts import JobsRead
from federation.reports.metrics import QuotaCollector
from federation.reports.models import QuotaReport, UserPrioReport
from federation.reports.quota import UnknownQueue, build_quota_report, known_tenants
from federation.reports.render import quota_csv, userprio_csv
from federation.reports.source import federation_capacity, load_accounting
from federation.reports.userprio import build_userprio
from federation.reports.window import AUTO, fitting_window, parse_when

router = APIRouter(prefix="/v1/reports", tags=["reports"], responses=ERROR_RESPONSES)
MAX_BINS = 2000
METRICS_MIN_INTERVAL = 10.0
"""Seconds between two reloads of the accounting for /metrics; scrapes in between reuse the last."""


@dataclass
class Inputs:
    snapshot: AccountingSnapshot
    tree: QueueTree
    jobs: JobsRead


def _who_sees(who: Principal, tenant: str | None) -> str | None:
    """The tenant filter the caller may use: its own for a tenant token, any for an admin."""
    if who.role is Role.TENANT:
        if tenant not in (None, who.name):
            raise ApiError(403, f"tenant {who.name!r} cannot see the report of tenant {tenant!r}")
        return who.name
    if not who.is_admin:
        raise ApiError(403, f"a {who.role.value} credential cannot read reports")
    return tenant


async def _gather(state: ServerState) -> Inputs | None:
    """The saved accounting, the tree and the job records; None before any queue tree is applied."""
    tree = await state.queues.get()
    if tree is None:
        return None
    snapshot = await load_accounting(state.store, state.config.fairshare, state.clock, tree)
    return Inputs(snapshot, tree, await state.reports.jobs(state.store, state.clock.now()))


async def _inputs(state: ServerState) -> Inputs:
    inputs = await _gather(state)
    if inputs is None:
        raise ApiError(409, "no queue tree has been applied yet: `fedq queues apply FILE`")
    return inputs


def _check_tenant(inputs: Inputs, who: Principal, tenant: str | None) -> None:
    if tenant is not None and who.is_admin and tenant not in known_tenants(inputs.tree, inputs.snapshot, inputs.jobs):
        raise ApiError(404, f"unknown tenant {tenant!r}")


def _time(text: str, now: float, name: str) -> float:
    try:
        return parse_when(text, now)
    except ValueError as exc:
        raise ApiError(422, f"invalid {name}: {exc}", [{"field": name, "message": str(exc)}]) from None


def _json_or_csv(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model, "content": {"text/csv": {}}, "description": "JSON, or CSV with format=csv"}}


@router.get("/quota", responses=_json_or_csv(QuotaReport))
async def quota(
    state: State,
    who: Caller,
    tenant: str | None = None,
    queue: str | None = None,
    since: Annotated[
        str, Query(description="'auto': the smallest of 1h, 6h, 1d, 7d, 30d that holds all the recorded usage")
    ] = AUTO,
    until: str = "now",
    by: Literal["cluster"] | None = None,
    format: Literal["json", "csv"] = "json",
    bins: Annotated[int, Query(ge=0, le=MAX_BINS, description="time bins of the usage series; 0: none")] = 0,
) -> Response:
    """Per tenant: quota, allocation, shares, fair-share target, RUP/EUP, usage and waits (docs/reports.md)."""
    tenant = _who_sees(who, tenant)
    async with state.reports.slot():
        inputs = await _inputs(state)
        _check_tenant(inputs, who, tenant)
        now = inputs.snapshot.time
        if since == AUTO:
            first = inputs.snapshot.first_usage(lambda key: tenant is None or key[0] == tenant)
            since = fitting_window(first, now)
        start, end = _time(since, now, "since"), _time(until, now, "until")
        if end < start:
            raise ApiError(422, f"the window ends before it starts (since={since!r}, until={until!r})")
        capacity = await federation_capacity(state.clusters, state.config.cluster.lost_after)
        build = partial(
            build_quota_report,
            inputs.snapshot,
            inputs.tree,
            inputs.jobs,
            capacity,
            since=start,
            until=end,
            tenant=tenant,
            queue=queue,
            by_cluster=by == "cluster",
            bins=bins,
        )
        try:
            report = await asyncio.to_thread(build)
        except UnknownQueue:
            raise ApiError(404, f"unknown queue {queue!r}") from None
    if format == "csv":
        return PlainTextResponse(quota_csv(report), media_type="text/csv")
    return JSONResponse(report.model_dump(mode="json"))


@router.get("/userprio", responses=_json_or_csv(UserPrioReport))
async def userprio(
    state: State, who: Caller, tenant: str | None = None, format: Literal["json", "csv"] = "json"
) -> Response:
    """Tenants by effective priority, best first, like ``condor_userprio``."""
    tenant = _who_sees(who, tenant)
    async with state.reports.slot():
        inputs = await _inputs(state)
    _check_tenant(inputs, who, tenant)
    report = build_userprio(inputs.snapshot, state.config.fairshare.half_life, tenant)
    if format == "csv":
        return PlainTextResponse(userprio_csv(report), media_type="text/csv")
    return JSONResponse(report.model_dump(mode="json"))


class QuotaMetrics:
    """The per-tenant and per-queue gauges on the app's usage registry; ``refresh`` before each scrape."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.collector = QuotaCollector()
        self._refreshed = float("-inf")
        state.metrics.usage.register(self.collector)

    async def refresh(self) -> None:
        now = self.state.clock.now()
        if now - self._refreshed < METRICS_MIN_INTERVAL:
            return
        inputs = await _gather(self.state)
        if inputs is None:
            return
        capacity = await federation_capacity(self.state.clusters, self.state.config.cluster.lost_after)
        at = inputs.snapshot.time
        build = partial(build_quota_report, inputs.snapshot, inputs.tree, inputs.jobs, capacity, since=at, until=at)
        report = await asyncio.to_thread(build)
        self.collector.update(inputs.snapshot, report)
        self._refreshed = now


def register_metrics(state: ServerState) -> QuotaMetrics:
    return QuotaMetrics(state)
