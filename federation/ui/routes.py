"""Serving the dashboard: ``/ui/`` (its one HTML page), ``/ui/static/*`` (its scripts and styles, shipped
as package data) and ``/`` redirecting to it. Nothing here reads the store or needs a token: the page
holds no data until its scripts fetch it from the API with the token the user typed in."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

STATIC = files("federation.ui") / "static"
SECURITY_HEADERS = {
    # Scripts and styles from this server only (no inline code), fetches to this API only, no framing.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


class _Assets(StaticFiles):
    """The package's static files, with the page's security headers."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(SECURITY_HEADERS)
        return response


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse("/ui/")


@router.get("/ui")
async def ui_without_slash() -> RedirectResponse:
    return RedirectResponse("/ui/")


@router.get("/ui/")
async def page() -> FileResponse:
    return FileResponse(str(STATIC / "index.html"), media_type="text/html", headers=SECURITY_HEADERS)


def mount(app: FastAPI) -> None:
    """Add the dashboard's routes to ``app``."""
    app.include_router(router)
    app.mount("/ui/static", _Assets(packages=[("federation.ui", "static")]), name="ui-static")
