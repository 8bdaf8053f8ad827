"""Job event streams: ``GET /v1/jobs/{id}/events`` (the history; ``?watch=true`` then streams each new
transition) and ``GET /v1/jobs?watch=true`` (a filtered listing's changes), as Server-Sent Events
(``federation.sse``), resumed after a revision (``?since=REV`` or ``Last-Event-ID``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from federation import sse
from federation.api.deps import Caller, State
from federation.api.errors import ERROR_RESPONSES, ApiError
from federation.api.views import JobHistory
from federation.auth import Principal, Role
from federation.fanout import FellBehind
from federation.sse import Message
from federation.store import CompactedError, StoreError
from federation.waits import wait_view
from federation.watch import (
    RETRY_AFTER,
    Listing,
    TooManyWatches,
    job_history,
    job_message,
    job_messages,
    listing_messages,
)
from federation.watch import start_message as listing_start

KEEPALIVE_EVERY = 15.0
"""Seconds an idle stream waits before it sends a keepalive comment."""
RELIST = "re-read the job (GET /v1/jobs/{id}/events) or the listing, then watch from its revision"

_FORMAT = (
    "Server-Sent Events, one message per store revision: `id` is the revision (everything up to it has "
    "been sent), `event` its kind and `data` one line of JSON. A job's stream: `job` messages "
    "`{revision, job: <summary>, events: [<history entries>]}`, the first with the whole history (unless "
    "resuming), then one per change that added entries; `removed` when the record is deleted (the stream "
    "ends). A listing's stream: first `start` `{revision}` (what it follows from), then `jobs` messages "
    "`{revision, changes: [{type: put|delete, job: <summary>}]}` (`delete`: the job left the listing; a put's "
    "summary carries `wait`, why it waits, as a listing's items do). "
    "`error` `{status, error}` ends a stream that cannot go on (410: history compacted, re-list; 503: "
    "reconnect, resuming after the last id read: the store's watch failed, or the client read too slowly). "
    "Comment lines (`: keepalive`) come every 15 s on an idle stream. Reconnect with "
    "`since=<last id>` (or the `Last-Event-ID` header) to miss nothing and repeat nothing."
)


def stream_responses(format_: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI answers of a route that streams (``format_``: what its messages are)."""
    return {
        200: {"content": {sse.MEDIA_TYPE: {"schema": {"type": "string", "description": format_}}}},
        429: {
            **ERROR_RESPONSES[429],
            "description": "too many event streams open for this tenant, or in all, on this server "
            "(api.maxWatchesPerTenant, api.maxStreams: Retry-After says when to try again)",
        },
    }


STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    **stream_responses(_FORMAT),
    410: {**ERROR_RESPONSES[404], "description": "the revision to resume after is compacted: " + RELIST},
}
_SINCE_HELP = "with watch=true: resume after this revision (a message's id); Last-Event-ID does the same"

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERROR_RESPONSES)


class EventStream(StreamingResponse):
    """A stream that gives back its caller's slot when it ends, however it ends (the client gone, the
    server shutting down), since a body that never started would run no ``finally`` of its own."""

    def __init__(self, body: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        super().__init__(
            body, media_type=sse.MEDIA_TYPE, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


@dataclass(frozen=True)
class WatchRequest:
    """``watch``, and the revision to resume after (``since`` or ``Last-Event-ID``), checked together."""

    watch: bool
    after: int | None


def watch_request(
    watch: bool = False,
    since: Annotated[int | None, Query(ge=0, description=_SINCE_HELP)] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> WatchRequest:
    if last_event_id is not None and since is None:
        if not last_event_id.strip().isdigit():
            message = "must be a revision (a stream message's id), e.g. 1234"
            raise ApiError(
                422, f"invalid Last-Event-ID header: {message}", [{"field": "Last-Event-ID", "message": message}]
            )
        since = int(last_event_id)
    if since is not None and not watch:
        message = "resumes a stream: add watch=true"
        raise ApiError(422, f"since (or Last-Event-ID) {message}", [{"field": "since", "message": message}])
    return WatchRequest(watch, since)


async def _resumable(state: State, after: int) -> None:
    """A 422 for a revision the store has not reached, a 410 for one whose history is compacted."""
    current = await state.store.revision()
    if after > current:
        message = f"is ahead of the store's revision {current}: pass the id of a message this API sent"
        raise ApiError(422, f"since {after} {message}", [{"field": "since", "message": message}])
    try:
        await state.store.require_history(after + 1)
    except CompactedError:
        raise ApiError(410, f"revision {after} is compacted: {RELIST}") from None


def event_stream(
    state: State, who: Principal, first: list[Message], rest: AsyncIterator[Message | None]
) -> EventStream:
    """``first`` then ``rest`` as SSE, holding one of the caller's stream slots until it ends."""
    try:
        release = state.watches.take(who.name)
    except TooManyWatches as exc:
        raise ApiError(429, str(exc), headers={"Retry-After": str(RETRY_AFTER)} if exc.everyone else None) from None

    async def body() -> AsyncIterator[bytes]:
        last: int | None = None
        for message in first:
            last = message.id if message.id is not None else last
            yield message.encode()
        try:
            async for change in rest:
                if change is not None and change.id is not None:
                    last = change.id
                yield sse.KEEPALIVE if change is None else change.encode()
        except CompactedError:
            yield Message(
                "error", {"status": 410, "error": f"the history this stream needs is compacted: {RELIST}"}
            ).encode()
        except StoreError as exc:
            yield Message("error", {"status": 503, "error": f"the store's watch failed ({exc}): reconnect"}).encode()
        except FellBehind as exc:
            resume = "" if last is None else f" with since={last}"
            yield Message("error", {"status": 503, "error": f"{exc}: reconnect{resume}"}).encode()

    return EventStream(body(), release)


async def watch_listing(
    state: State, who: Principal, stream: WatchRequest, listing: Listing, *, paged: bool
) -> EventStream:
    """``GET /v1/jobs?watch=true``: the listing's changes from now, or after ``stream.after`` (``paged``:
    the request also gave ``limit`` or ``continue``, which only a page takes)."""
    if paged:
        message = "pages a listing; a watch streams every change of it: leave limit and continue out"
        raise ApiError(422, f"limit (or continue) {message}", [{"field": "limit", "message": message}])
    if stream.after is not None:
        await _resumable(state, stream.after)
    after = stream.after if stream.after is not None else await state.store.revision()
    changes = listing_messages(state.hubs, listing, after, KEEPALIVE_EVERY)
    return event_stream(state, who, [listing_start(after)], _with_waits(state, changes))


async def _with_waits(state: State, messages: AsyncIterator[Message | None]) -> AsyncIterator[Message | None]:
    """Each job a listing's stream puts with its ``wait``, as the listing's items carry it (the reason as of
    the leader's status when the change is sent), so a live table shows why as a listed one does."""
    async for message in messages:
        if message is not None and message.event == "jobs":
            view, now = await state.status.get(), state.clock.now()
            changes = [
                {**change, "job": {**change["job"], "wait": wait_view(change["job"], view, now)}}
                if change["type"] == "put"
                else change
                for change in message.data["changes"]
            ]
            message = Message(message.event, {**message.data, "changes": changes}, message.id)
        yield message


@router.get("/{job_id}/events", response_model=JobHistory, responses=STREAM_RESPONSES)
async def job_events(
    job_id: str,
    state: State,
    who: Caller,
    stream: Annotated[WatchRequest, Depends(watch_request)],
) -> Any:
    """The job's history; with ``watch=true`` a stream of it, then of each transition as it happens. Another
    tenant's job is a 404, as a missing one is."""
    if who.role not in (Role.TENANT, Role.ADMIN):
        raise ApiError(403, f"a {who.role.value} token cannot read jobs")
    found = await job_history(state.store, job_id)
    if found is None or (who.role is Role.TENANT and found[0].tenant != who.name):
        raise ApiError(404, f"job {job_id!r} not found (or not yours)")
    record, revision = found
    if not stream.watch:
        return {"id": record.id, "revision": revision, "state": record.state.value, "events": record.events}
    if stream.after is not None:
        await _resumable(state, stream.after)
        first: list[Message] = []
    else:
        first = [job_message(record, revision)]
    after = revision if stream.after is None else stream.after
    return event_stream(state, who, first, job_messages(state.hubs, job_id, after, KEEPALIVE_EVERY))
