"""``/v1/clusters``: join tokens, join, the agents' report call, listing and cordon."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError

from federation.api.deps import Caller, State, read_document, require_admin
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid
from federation.api.routes_admin import token_expiry
from federation.auth import Role
from federation.clusters import JoinRefused, ReportTooLarge, UnknownCluster
from federation.models.cluster import ClusterReport, JoinRequest, summed
from federation.models.queue import check_tenant_name

router = APIRouter(prefix="/v1/clusters", tags=["clusters"], responses=ERROR_RESPONSES)


def _cluster_name(name: str) -> str:
    try:
        return check_tenant_name(name)
    except ValueError:
        raise ApiError(
            422,
            f"invalid cluster name {name!r}: lower-case letters, digits, '-', '_', '.'",
            [{"field": "name", "message": "invalid cluster name"}],
        ) from None


@router.post("/{name}/tokens", status_code=201)
async def create_join_token(name: str, request: Request, state: State, who: Caller) -> dict[str, Any]:
    require_admin(who)
    _cluster_name(name)
    expires_at = await token_expiry(request, state)
    token = await state.tokens.issue(Role.JOIN, name, expires_at=expires_at)
    return {"cluster": name, "token": token, "expires_at": expires_at}


@router.post("/join", status_code=201)
async def join(request: Request, state: State) -> dict[str, Any]:
    """Unauthenticated except by the one-time join token in the body."""
    doc = await read_document(request, 64 * 1024)
    try:
        body = JoinRequest.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "join request") from None
    _cluster_name(body.name)
    try:
        credential = await state.clusters.join(body)
    except JoinRefused as exc:
        raise ApiError(401, str(exc)) from None
    return {"cluster": body.name, "credential": credential}


@router.post("/{name}/report")
async def report(name: str, request: Request, state: State, who: Caller) -> dict[str, Any]:
    if who.role is not Role.CLUSTER:
        raise ApiError(403, "reports need a cluster credential (from `fedq agent join`)")
    if who.name != name:
        raise ApiError(403, f"this credential belongs to cluster {who.name!r}; it cannot report as {name!r}")
    doc = await read_document(request, state.config.api.max_body_bytes)
    try:
        body = ClusterReport.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "cluster report") from None
    try:
        reply = await state.clusters.report(name, body)
    except UnknownCluster:
        raise ApiError(404, f"cluster {name!r} is not registered; join it again") from None
    except ReportTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    return reply.model_dump(mode="json")


@router.get("")
async def list_clusters(state: State, who: Caller) -> dict[str, Any]:
    if who.role is Role.CLUSTER:
        raise ApiError(403, "a cluster credential cannot list clusters")
    items = []
    now = state.clock.now()
    for record, latest in await state.clusters.all():
        reported = latest.nodes if latest is not None else []
        capacity, free = summed(reported), summed(reported, free=True)
        nodes = sum(node.count for node in reported)
        items.append(
            {
                "name": record.name,
                "backend": record.backend,
                "labels": record.labels,
                "state": state.clusters.state_of(record, latest, state.config.cluster.lost_after).value,
                "nodes": nodes,
                "capacity": capacity,
                "free": free,
                "running": len(latest.running) if latest else 0,
                "last_report_age": None if latest is None else round(now - latest.time, 3),
            }
        )
    return {"items": items}


async def _cordon(name: str, state: State, who: Caller, cordoned: bool) -> dict[str, Any]:
    require_admin(who)
    try:
        record = await state.clusters.set_cordon(name, cordoned)
    except UnknownCluster:
        raise ApiError(404, f"cluster {name!r} is not registered") from None
    return {"name": record.name, "cordoned": record.cordoned}


@router.post("/{name}/cordon")
async def cordon(name: str, state: State, who: Caller) -> dict[str, Any]:
    return await _cordon(name, state, who, True)


@router.post("/{name}/uncordon")
async def uncordon(name: str, state: State, who: Caller) -> dict[str, Any]:
    return await _cordon(name, state, who, False)
