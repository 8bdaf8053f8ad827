"""Tokens (admin only): tenant, admin and metrics tokens, the listing and revokes. Join tokens are made
under ``/v1/clusters``; a cluster's credential at its join."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, ValidationError

from federation.api.deps import AuditEntry, Caller, State, audited, read_document, require_admin
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid
from federation.api.schema import TokenLifetime, request_body
from federation.api.views import Identity, IssuedToken, TokenList, TokenView
from federation.auth import Principal, Role, TokenInfo, UnknownToken, id_of
from federation.models import check_tenant_name
from federation.models.cluster import ClusterGrant

router = APIRouter(tags=["tokens"], responses=ERROR_RESPONSES)

Issue = Annotated[AuditEntry, Depends(audited("token.issue"))]


def expires_at(state: State, ttl: Any, default: float) -> float:
    """When a token asked for with ``ttl`` (None: ``default`` seconds) expires; a 422 naming ``ttl``
    when it is not a finite, positive duration within ``auth.maxTokenTtl``."""
    try:
        seconds = default if ttl is None else state.config.auth.ttl(ttl)
    except ValueError as exc:
        raise ApiError(422, f"invalid ttl: {exc}", [{"field": "ttl", "message": str(exc)}]) from None
    return state.clock.now() + seconds


async def _token_body(request: Request, join: bool) -> dict[str, Any]:
    """An optional ``{"ttl": "30d"}`` body; a join token's may also hold its ``labels`` and ``capacity``."""
    if not (await request.body()).strip():
        return {}
    doc = await read_document(request, 4096)
    allowed = {"ttl", "labels", "capacity"} if join else {"ttl"}
    if not isinstance(doc, dict) or set(doc) - allowed:
        shape = '{"ttl": "1d", "labels": {...}, "capacity": {"cpu": 64}}' if join else '{"ttl": "30d"}'
        raise ApiError(422, f"body may only hold {shape}", [{"field": "ttl", "message": "unknown fields"}])
    return doc


def _grant(doc: dict[str, Any]) -> ClusterGrant | None:
    """A join token's bounds, from its body's ``labels`` and ``capacity`` (None: no bounds)."""
    if "labels" not in doc and "capacity" not in doc:
        return None
    try:
        return ClusterGrant.model_validate({k: doc[k] for k in ("labels", "capacity") if k in doc})
    except ValidationError as exc:
        raise invalid(exc, "join token request", model=ClusterGrant) from None


def checked_name(name: str, what: str) -> str:
    try:
        return check_tenant_name(name)
    except ValueError:
        message = f"invalid {what} name {name!r}: lower-case letters, digits, '-', '_', '.'"
        raise ApiError(422, message, [{"field": "name", "message": f"invalid {what} name"}]) from None


def _issued(kind: Role, name: str, token: str, expiry: float, audit: AuditEntry) -> dict[str, Any]:
    """A new token's answer: the token itself is shown this once, never again (not even to an admin)."""
    tid = id_of(token)
    audit.target.update(kind=kind.value, id=tid, expires_at=expiry)
    return {"id": tid, "kind": kind.value, "name": name, "token": token, "expires_at": expiry}


async def issue_for(
    role: Role, name: str, request: Request, state: State, who: Principal, audit: AuditEntry
) -> dict[str, Any]:
    """A tenant token or a cluster's join token, for the tenant or cluster the route's path names."""
    require_admin(who)
    tenant = role is Role.TENANT
    checked_name(name, "tenant" if tenant else "cluster")
    default = state.config.auth.token_ttl if tenant else state.config.auth.join_token_ttl
    doc = await _token_body(request, join=not tenant)
    expiry = expires_at(state, doc.get("ttl"), default)
    grant = None if tenant else _grant(doc)
    token = await state.tokens.issue(role, name, expires_at=expiry, grant=grant)
    if grant is not None:
        audit.target.update(grant=grant.model_dump(exclude_none=True))
    return {"tenant" if tenant else "cluster": name, **_issued(role, name, token, expiry, audit)}


@router.post(
    "/v1/tenants/{name}/tokens",
    status_code=201,
    tags=["tenants"],
    response_model=IssuedToken,
    response_model_exclude_unset=True,
    openapi_extra=request_body(TokenLifetime, required=False),
)
async def create_tenant_token(name: str, request: Request, state: State, who: Caller, audit: Issue) -> dict[str, Any]:
    return await issue_for(Role.TENANT, name, request, state, who, audit)


class NewToken(BaseModel):
    """``POST /v1/tokens``: a token that belongs to no tenant or cluster; ``name`` says who holds it."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["admin", "metrics"]
    name: str
    ttl: Any = None
    """Checked by ``auth.ttl`` as every route's ``ttl`` is (a boolean is no duration)."""


@router.post(
    "/v1/tokens",
    status_code=201,
    response_model=IssuedToken,
    response_model_exclude_unset=True,
    openapi_extra=request_body(NewToken),
)
async def create_token(request: Request, state: State, who: Caller, audit: Issue) -> dict[str, Any]:
    """An admin token (rotate the admin secret: create one, switch to it, revoke the old) or a metrics
    token (a scraper's: all of ``/metrics``; elsewhere only what any token reads, the queue tree and the
    cluster list)."""
    require_admin(who)
    doc = await read_document(request, 4096)
    try:
        body = NewToken.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "token request", model=NewToken) from None
    kind = Role(body.kind)
    checked_name(body.name, f"{kind.value} token")
    audit.target["name"] = body.name
    expiry = expires_at(state, body.ttl, state.config.auth.token_ttl)
    token = await state.tokens.issue(kind, body.name, expires_at=expiry)
    return _issued(kind, body.name, token, expiry, audit)


def _view(info: TokenInfo, now: float) -> dict[str, Any]:
    record = info.record
    ended = record.ended(now)
    status = "active" if ended is None else "revoked" if record.revoked_at is not None else "expired"
    return {
        "id": info.id,
        "kind": record.role.value,
        "name": record.name,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "revoked_at": record.revoked_at,
        "revoked_because": record.revoked_because,
        "state": status,
    }


@router.get("/v1/tokens", response_model=TokenList)
async def list_tokens(
    state: State, who: Caller, kind: Annotated[Role | None, Query()] = None, name: str | None = None
) -> dict[str, Any]:
    """Every token's id, kind, whom it names and its times, oldest first; never a token itself (the
    store holds only digests). Expired and revoked ones stay listed 30 days."""
    require_admin(who)
    now = state.clock.now()
    items = [
        _view(info, now)
        for info in await state.tokens.list()
        if (kind is None or info.record.role is kind) and (name is None or info.record.name == name)
    ]
    return {"items": items}


@router.delete("/v1/tokens/{token_id}", response_model=TokenView)
async def revoke_token(
    token_id: str, state: State, who: Caller, _: Annotated[AuditEntry, Depends(audited("token.revoke"))]
) -> dict[str, Any]:
    """The token stops working at once, on every replica (a revoked one is answered as it is)."""
    require_admin(who)
    try:
        info = await state.tokens.revoke(token_id, f"revoked by {who.role.value} {who.name}")
    except ValueError as exc:
        raise ApiError(422, str(exc), [{"field": "token_id", "message": str(exc)}]) from None
    except UnknownToken:
        raise ApiError(
            404, f"no token with id {token_id} (a spent join token is gone; see `fedq token list`)"
        ) from None
    return _view(info, state.clock.now())


@router.get("/v1/whoami", response_model=Identity)
async def whoami(who: Caller) -> dict[str, Any]:
    """Whom the token names (any token but a join token): a page asks this once to know what to offer."""
    return {"role": who.role.value, "name": who.name, "token_id": who.token_id}
