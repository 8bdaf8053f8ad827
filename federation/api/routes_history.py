"""``GET /v1/admin/history``: a window of the federation's jobs as a simulator scenario, for ``fedq whatif``.

Admins only: it shows every tenant's jobs. The records are read as a report's are (``ReportGate``: one
at a time per replica, a page per worker-thread step), and the scenario is built and encoded in a
worker thread, so a history of 100,000 jobs never holds the event loop for more than a page.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any, Literal

import yaml
from fastapi import APIRouter
from fastapi.responses import Response

from federation.api.deps import Caller, State, require_admin
from federation.api.errors import ERROR_RESPONSES, ApiError
from federation.reports.facts import read_jobs
from federation.reports.window import parse_when
from federation.store import KeyValue
from federation.whatif.history import HistoryExport, Page, check_window, cluster_entries, export_page, scenario_document

router = APIRouter(prefix="/v1/admin", tags=["history"], responses=ERROR_RESPONSES)


def _since(text: str, now: float, keep_finished: float) -> float:
    try:
        since = parse_when(text, now)
        check_window(since, now, keep_finished)
    except ValueError as exc:
        raise ApiError(422, f"invalid since: {exc}", [{"field": "since", "message": str(exc)}]) from None
    return since


def _encoded(document: dict[str, Any], format: str) -> bytes:
    if format == "yaml":
        return yaml.safe_dump(document, sort_keys=False).encode()
    return json.dumps(document, separators=(",", ":")).encode()


_ANSWER = {"model": HistoryExport, "content": {"application/yaml": {}}, "description": "JSON, or YAML with format=yaml"}


@router.get("/history", responses={200: _ANSWER})
async def history(state: State, who: Caller, since: str = "7d", format: Literal["json", "yaml"] = "json") -> Response:
    """The jobs submitted since ``since`` (``7d``: that long ago; an ISO date; Unix seconds) as a
    ``fedq simulate`` scenario with a ``history`` block of what really happened (docs/whatif.md)."""
    require_admin(who)
    now = state.clock.now()
    start = _since(since, now, state.config.store.keep_finished)
    tree = await state.queues.get()
    if tree is None:
        raise ApiError(409, "no queue tree has been applied yet: `fedq queues apply FILE`")
    clusters = cluster_entries(await state.clusters.shapes())
    if not clusters:
        raise ApiError(409, "no joined cluster has reported its nodes yet: a replay needs at least one")

    def page(kvs: list[KeyValue]) -> list[Page]:
        return [export_page(kvs, start, now)]

    async with state.reports.slot():
        pages = await read_jobs(state.store, page)
    build = partial(scenario_document, pages, clusters, tree.config, state.config, start, now)
    document = await asyncio.to_thread(build)
    body = await asyncio.to_thread(_encoded, document, format)
    return Response(body, media_type="application/yaml" if format == "yaml" else "application/json")
