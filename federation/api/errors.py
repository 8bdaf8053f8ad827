"""One error shape for every 4xx/5xx: ``{"error": message, "fields": [{"field", "message"}]}``.

Clients (the CLI included) print ``error`` and each field line, so messages are written for people.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, get_args

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from federation.store import RequestTooLarge, StoreFull, StoreUnavailable


class ErrorField(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    """What every error response carries, so a client generated from the OpenAPI schema can read it."""

    error: str
    fields: list[ErrorField] = []


def _documented(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


#: The error responses every API route may give, for the OpenAPI schema (routers pass it as ``responses``).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _documented("the body is not JSON, or not the kind of document the route takes"),
    401: _documented("no token, or one that is unknown or expired"),
    403: _documented("the token's role or tenant may not do this"),
    404: _documented("no such job, queue, cluster or tenant (finished jobs are removed after store.keepFinished)"),
    409: _documented("the object changed or exists already: read it again and retry"),
    413: _documented("the body, the number of jobs in it or a job's record is over the API's limits"),
    429: _documented("the tenant's quota (quotas:) would be exceeded: wait for jobs to end"),
    422: _documented("a field is invalid; each one is named in fields"),
    503: _documented("the store is unavailable, or nearly full: try again later"),
}


class ApiError(Exception):
    def __init__(
        self, status: int, message: str, fields: Sequence[dict[str, str]] = (), headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.fields = list(fields)
        self.headers = headers


def field_path(loc: Sequence[Any], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def validation_fields(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> list[dict[str, str]]:
    """Each error as a field and a message for people; with ``model``, the one validated, an unknown
    field's message names the closest field the document may have there."""
    fields = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        if error["type"] == "extra_forbidden" and loc:
            message = _unknown_field(str(loc[-1]), _field_names(model, loc[:-1]))
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
        fields.append({"field": field_path(loc, prefix), "message": message})
    return fields


def _unknown_field(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"unknown field {name!r} (did you mean {close[0]!r}?)"
    return f"unknown field {name!r}; the fields here are {', '.join(known)}" if known else f"unknown field {name!r}"


def _field_names(model: type[BaseModel] | None, loc: Sequence[Any]) -> list[str]:
    """The fields (by the names documents use) of the model found at ``loc`` inside ``model``."""
    for part in loc:
        if model is None:
            return []
        if isinstance(part, int):
            continue  # an index into a list the previous part's field holds
        field = next((f for name, f in model.model_fields.items() if part in (name, f.alias)), None)
        model = None if field is None else _model_in(field.annotation)
    return [] if model is None else [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, itself or inside a list, an optional or an annotation."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def summary(fields: Sequence[dict[str, str]]) -> str:
    """The first few fields on one line, for an error's message."""
    return "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])


def invalid(exc: ValidationError, what: str, prefix: str = "", model: type[BaseModel] | None = None) -> ApiError:
    fields = validation_fields(exc, prefix, model)
    return ApiError(422, f"invalid {what}: {summary(fields)}", fields)


def _body(message: str, fields: Sequence[dict[str, str]] = ()) -> dict[str, Any]:
    return {"error": message, "fields": list(fields)}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(_body(exc.message, exc.fields), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [{"field": field_path(error["loc"]), "message": str(error["msg"])} for error in exc.errors()]
        return JSONResponse(_body(f"invalid request: {summary(fields)}", fields), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(_body(str(exc.detail)), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(ClientDisconnect)
    async def _client_gone(_: Request, exc: ClientDisconnect) -> JSONResponse:
        """The client left (or was cut off: api.bodyTimeout) before its body arrived: nobody reads this."""
        return JSONResponse(_body("the client went away before its request body arrived"), status_code=408)

    @app.exception_handler(StoreUnavailable)
    async def _store_down(_: Request, exc: StoreUnavailable) -> JSONResponse:
        return JSONResponse(_body(f"the store is unavailable, try again: {exc}"), status_code=503)

    @app.exception_handler(StoreFull)
    async def _store_full(_: Request, exc: StoreFull) -> JSONResponse:
        """etcd's NOSPACE alarm or the store budget: nothing was written; reads and cancels still work."""
        return JSONResponse(_body(str(exc)), status_code=503)

    @app.exception_handler(RequestTooLarge)
    async def _too_large(_: Request, exc: RequestTooLarge) -> JSONResponse:
        return JSONResponse(_body(f"the request is too large for the store: {exc}"), status_code=413)
