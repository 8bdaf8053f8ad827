"""Request plumbing: who is calling, the audit line of what they do, and the body read within the size
limit and parsed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError

from federation.api.errors import ApiError
from federation.api.state import ServerState
from federation.auth import Principal, Role, TokenRefused
from federation.documents import DocumentLimits, DocumentRefused, parse_json, parse_yaml

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
"""Content types read as YAML; any other is read as JSON."""


async def server_state(request: Request) -> ServerState:
    """Async, as every dependency here: FastAPI runs a plain function in a worker thread, a hand-off per
    request."""
    state: ServerState = request.app.state.fedq
    return state


State = Annotated[ServerState, Depends(server_state)]


async def principal(request: Request, state: State) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "missing bearer token: pass --token or set FEDQ_TOKEN", [])
    try:
        who = await state.tokens.resolve(token.strip())
    except TokenRefused as exc:
        raise ApiError(401, str(exc)) from None
    if who.role is Role.JOIN:
        raise ApiError(401, "a join token only joins its cluster: pass it to `fedq agent join --token`")
    return who


Caller = Annotated[Principal, Depends(principal)]


@dataclass
class AuditEntry:
    """An audit line's ``target``: the route's path and query parameters, and what the handler adds."""

    target: dict[str, Any] = field(default_factory=dict)


def audited(action: str, *, admin_only: bool = False) -> Callable[..., AsyncIterator[AuditEntry]]:
    """A dependency writing one audit line for the request once it is answered, refused or failed
    (``admin_only``: only when the caller is an admin). A request without a valid token never gets
    this far: the 401 is counted in ``fedq_api_rejections_total``, not audited."""

    async def entry(request: Request, state: State, who: Caller) -> AsyncIterator[AuditEntry]:
        line = AuditEntry({**request.path_params, **request.query_params})
        if admin_only and not who.is_admin:
            yield line
            return
        try:
            yield line
        except ApiError as exc:
            state.audit.write(who, action, line.target, status=exc.status, error=exc.message)
            raise
        except RequestValidationError:
            state.audit.write(who, action, line.target, status=422, error="invalid request parameters")
            raise
        except Exception as exc:
            state.audit.write(who, action, line.target, error=f"{type(exc).__name__}: {exc}")
            raise
        state.audit.write(who, action, line.target)

    return entry


def require_admin(who: Principal) -> None:
    if not who.is_admin:
        raise ApiError(403, f"this needs an admin token; you are {who.role.value} {who.name!r}")


async def read_body(request: Request, limit: int) -> bytes:
    """The body's bytes, refused past ``limit`` before it is read in full, and when empty."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body of {declared} bytes is over the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise ApiError(400, "request body is empty: send a JSON (or YAML) document")
    return raw


async def read_document(request: Request, limit: int) -> Any:
    """The body as JSON or YAML (by content type), refused past ``limit`` bytes before it is read in full,
    and past the API's depth and expanded-size limits (``api.maxDepth``, ``api.maxExpandedBytes``) once
    parsed; a refusal names the field and writes nothing."""
    raw = await read_body(request, limit)
    api = (await server_state(request)).config.api
    limits = DocumentLimits(api.max_depth, min(api.max_expanded_bytes, limit))
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip()
    try:
        if content_type in YAML_TYPES:
            return parse_yaml(raw, limits)
        return parse_json(raw, limits)
    except DocumentRefused as exc:
        raise ApiError(exc.status, exc.message, [{"field": exc.field, "message": exc.message}]) from None
