"""``GET /v1/jobs/{id}/logs``: a job's output, read from the federation's log store
(``federation/joblogs``); ``watch=true`` streams new lines as Server-Sent Events until the job ends."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from federation import sse
from federation.api.deps import Caller, State
from federation.api.errors import ERROR_RESPONSES, ApiError
from federation.api.routes_watch import KEEPALIVE_EVERY, WatchRequest, event_stream, stream_responses, watch_request
from federation.auth import Role
from federation.joblogs.view import LogFilter, follow, record_of, snapshot, split_cursor
from federation.models.logs import JobLogs

_FORMAT = (
    "Server-Sent Events: `lines` messages `{epoch, lines: [{time, task, stream, text}]}`, the first with "
    "the lines so far (unless resuming), then one per batch of new lines; `end` `{epoch, state}` when the "
    "job has ended and its output is complete (the stream ends). Each message's `id` is a cursor: "
    "reconnect with `since=<last id>` (or `Last-Event-ID`) to miss and repeat nothing. `: keepalive` "
    "comments come every 15 s on an idle stream."
)
router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERROR_RESPONSES)


def _field(name: str, message: str) -> ApiError:
    return ApiError(422, f"{name} {message}", [{"field": name, "message": message}])


@router.get("/{job_id}/logs", response_model=JobLogs, responses=stream_responses(_FORMAT))
async def job_logs(
    job_id: str,
    state: State,
    who: Caller,
    stream: Annotated[WatchRequest, Depends(watch_request)],
    task: Annotated[
        str | None, Query(max_length=200, description="a task's name (all its replicas), index, or name-index")
    ] = None,
    output: Annotated[Literal["stdout", "stderr"] | None, Query(alias="stream", description="one stream only")] = None,
    tail: Annotated[int | None, Query(ge=0, le=1_000_000, description="only the last N lines")] = None,
    since_seconds: Annotated[
        float | None, Query(gt=0, description="only lines printed in the last N seconds, e.g. 600")
    ] = None,
    epoch: Annotated[int | None, Query(ge=0, description="the run to show (default: the latest)")] = None,
) -> Any:
    """One run's stdout and stderr lines, oldest first. Another tenant's job is a 404, as a missing one is."""
    if who.role not in (Role.TENANT, Role.ADMIN):
        raise ApiError(403, f"a {who.role.value} token cannot read jobs")
    record = await record_of(state.store, job_id)
    if record is None or (who.role is Role.TENANT and record.tenant != who.name):
        raise ApiError(404, f"job {job_id!r} not found (or not yours)")
    if epoch is not None and epoch > record.epoch:
        raise _field("epoch", f"must be at most {record.epoch}, the job's latest run")
    run = record.epoch if epoch is None else epoch
    keep = LogFilter(task, output, None if since_seconds is None else state.clock.now() - since_seconds)
    if not stream.watch:
        return snapshot(state.logs, job_id, run, keep, tail)
    if stream.after is not None:
        resume, offset = split_cursor(stream.after)
        if resume > record.epoch or not state.logs.at_line_start(job_id, resume, offset):
            raise _field("since", "is not a cursor of this job's logs: pass the id of a message this API sent")
        first: list[sse.Message] = []
        start = stream.after
    else:
        now = snapshot(state.logs, job_id, run, keep, tail)
        first = [sse.Message("lines", {"epoch": run, "lines": now["lines"]}, now["cursor"])]
        start = now["cursor"]
    rest = follow(state.store, state.logs, job_id, keep, start, state.clock.now, KEEPALIVE_EVERY)
    return event_stream(state, who, first, rest)
