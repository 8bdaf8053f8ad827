"""``/v1/clusters``: join tokens, join, the agents' report call, listing and cordon."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import ValidationError

from federation.api.deps import Caller, State, audited, read_body, read_document, require_admin
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid
from federation.api.routes_tokens import Issue, checked_name, issue_for
from federation.api.schema import JoinTokenRequest, request_body
from federation.api.views import ClusterList, Cordoned, IssuedToken, Joined
from federation.auth import Principal, Role, id_of
from federation.clusters import ClaimRefused, JoinRefused, ReportTooLarge, UnknownCluster
from federation.models.cluster import ClusterReport, JoinRequest, ReportReply, summed

router = APIRouter(prefix="/v1/clusters", tags=["clusters"], responses=ERROR_RESPONSES)


@router.post(
    "/{name}/tokens",
    status_code=201,
    response_model=IssuedToken,
    response_model_exclude_unset=True,
    openapi_extra=request_body(JoinTokenRequest, required=False),
)
async def create_join_token(name: str, request: Request, state: State, who: Caller, audit: Issue) -> dict[str, Any]:
    return await issue_for(Role.JOIN, name, request, state, who, audit)


@router.post("/join", status_code=201, response_model=Joined, openapi_extra=request_body(JoinRequest))
async def join(request: Request, state: State) -> dict[str, Any]:
    """Unauthenticated except by the one-time join token in the body. The cluster's new credential
    replaces any it had: an earlier one stops working at once."""
    doc = await read_document(request, 64 * 1024)
    try:
        body = JoinRequest.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "join request") from None
    checked_name(body.name, "cluster")
    try:
        credential = await state.clusters.join(body)
    except JoinRefused as exc:  # no valid token: not audited, as no request without one is
        raise ApiError(401, str(exc)) from None
    except ClaimRefused as exc:  # the token is left unspent: join again with labels it allows
        raise ApiError(403, str(exc), [{"field": "labels", "message": str(exc)}]) from None
    joined = Principal(Role.JOIN, body.name, id_of(body.token))
    state.audit.write(joined, "cluster.join", {"name": body.name, "credential": id_of(credential)})
    return {"cluster": body.name, "credential": credential, "lease": state.clusters.lease}


@router.post("/{name}/report", response_model=ReportReply, openapi_extra=request_body(ClusterReport))
async def report(name: str, request: Request, state: State, who: Caller) -> Response:
    if who.role is not Role.CLUSTER:
        raise ApiError(403, "reports need a cluster credential (from `fedq agent join`)")
    if who.name != name:
        raise ApiError(403, f"this credential belongs to cluster {who.name!r}; it cannot report as {name!r}")
    # Parsed straight into the model (an agent sends JSON, every second): its fields nest a fixed depth.
    raw = await read_body(request, state.config.api.max_body_bytes)
    try:
        body = ClusterReport.model_validate_json(raw)
    except ValidationError as exc:
        if any(error["type"] == "json_invalid" for error in exc.errors()):
            raise ApiError(400, f"malformed JSON body: {exc.errors()[0]['msg']}") from None
        raise invalid(exc, "cluster report") from None
    try:
        async with state.agent_reports:  # its turn (AGENT_REPORTS_AT_ONCE)
            reply = await state.clusters.report(name, body)
    except UnknownCluster:
        raise ApiError(404, f"cluster {name!r} is not registered; join it again") from None
    except ReportTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    except ClaimRefused as exc:
        raise ApiError(422, str(exc), [{"field": "nodes", "message": str(exc)}]) from None
    # Built by its model already: answered as it is, not checked and encoded a second time by FastAPI.
    return Response(reply.model_dump_json(), media_type="application/json")


@router.get("", response_model=ClusterList)
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
                "cordoned": record.cordoned,
                "lost_after": state.config.cluster.lost_after,
                "shapes": [node.model_dump(mode="json") for node in reported],
            }
        )
    return {"items": items}


async def _cordon(name: str, state: State, who: Principal, cordoned: bool) -> dict[str, Any]:
    require_admin(who)
    try:
        record = await state.clusters.set_cordon(name, cordoned)
    except UnknownCluster:
        raise ApiError(404, f"cluster {name!r} is not registered") from None
    return {"name": record.name, "cordoned": record.cordoned}


@router.post("/{name}/cordon", dependencies=[Depends(audited("cluster.cordon"))], response_model=Cordoned)
async def cordon(name: str, state: State, who: Caller) -> dict[str, Any]:
    return await _cordon(name, state, who, True)


@router.post("/{name}/uncordon", dependencies=[Depends(audited("cluster.uncordon"))], response_model=Cordoned)
async def uncordon(name: str, state: State, who: Caller) -> dict[str, Any]:
    return await _cordon(name, state, who, False)
