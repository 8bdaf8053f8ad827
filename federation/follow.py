"""Following job event streams from the client: after a lost connection or a restarted server, reconnect
and resume after the last revision read, so a caller sees each message once and misses none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from federation.client import FedqError
from federation.sse import Message, Reader

if TYPE_CHECKING:
    from federation.client import FedqClient

T = TypeVar("T")

TERMINAL = frozenset({"Succeeded", "Failed", "Cancelled"})
RESUME_FOR = 60.0
"""Seconds a stream keeps trying to reconnect before it gives up."""
READ_TIMEOUT = 45.0
"""Seconds without a byte (the server sends a keepalive every 15 s) before a stream is taken for dead."""


def _retryable(error: FedqError) -> bool:
    return error.status == 0 or error.status >= 500


def messages(
    client: FedqClient,
    path: str,
    params: dict[str, Any],
    *,
    since: int | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Generator[Message, None, None]:
    """The stream's messages, reconnecting after ``since`` (then after the last id read) whenever the
    connection drops or the server fails, for up to ``RESUME_FOR`` seconds in a row; refusals (4xx,
    410 included) raise ``FedqError``, and a ``deadline`` (of ``clock``) passed raises ``TimeoutError``."""
    last = since
    failing_from: float | None = None
    delay = 0.1
    while True:
        query = {**params, "watch": "true", "since": last}
        timeout = READ_TIMEOUT if deadline is None else max(0.1, min(READ_TIMEOUT, deadline - clock()))
        try:
            with client.stream(path, query, timeout) as lines:
                reader = Reader()
                for line in lines:
                    message = reader.feed(line)
                    if deadline is not None and clock() > deadline:
                        raise TimeoutError(f"{path}: not done within the time given")
                    if message is None:
                        continue
                    if message.event == "error":
                        raise FedqError(int(message.data["status"]), str(message.data["error"]))
                    failing_from, delay = None, 0.1
                    if message.id is not None:
                        last = message.id
                    yield message
        except FedqError as exc:
            if not _retryable(exc):
                raise
            error = exc
        else:
            error = FedqError(0, f"the server ended the stream {path}")  # a shutdown: resume on a replica
        now = clock()
        if deadline is not None and now > deadline:
            raise TimeoutError(f"{path}: not done within the time given")
        failing_from = now if failing_from is None else failing_from
        if now - failing_from > RESUME_FOR:
            raise FedqError(
                error.status, f"lost the stream {path} and could not resume it for {RESUME_FOR:g}s: {error}"
            )
        sleep(delay)
        delay = min(2 * delay, 2.0)


def job_events(client: FedqClient, job_id: str, *, since: int | None = None) -> Iterator[dict[str, Any]]:
    """Each entry of the job's history (unless resuming after ``since``), then each new one as it
    happens, with the ``revision`` that carried it and the job's ``state`` after that revision; ends
    when the job's record is removed."""
    for message in messages(client, f"/v1/jobs/{job_id}/events", {}, since=since):
        if message.event == "removed":
            return
        state = message.data["job"]["state"]
        for event in message.data["events"]:
            yield {"job": job_id, "revision": message.id, "state": state, **event}


def job_logs(client: FedqClient, job_id: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each line of a job's log stream (``GET /v1/jobs/{id}/logs?watch=true``), with its run's ``epoch``;
    ends with the stream's ``end`` (the job ended and its output is complete)."""
    for message in messages(client, f"/v1/jobs/{job_id}/logs", params):
        if message.event == "end":
            return
        for line in message.data["lines"]:
            yield {**line, "epoch": message.data["epoch"]}


def listing_changes(client: FedqClient, **filters: Any) -> Generator[Message, None, None]:
    """A listing's stream (``state``, ``queue``, ``tenant``): its ``start`` message, then ``jobs`` messages."""
    return messages(client, "/v1/jobs", filters)


def wait(
    client: FedqClient,
    ids: Iterable[str],
    timeout: float | None = None,
    *,
    tenant: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Block until every job of ``ids`` has ended; answers each one's end state (Succeeded, Failed,
    Cancelled). One listing stream follows them all: its start comes first, so a job read after it
    that has not ended yet is sure to end on the stream. ``TimeoutError`` after ``timeout`` seconds."""
    wanted = list(dict.fromkeys(ids))
    deadline = None if timeout is None else clock() + timeout
    stream = messages(client, "/v1/jobs", {"tenant": tenant}, deadline=deadline, clock=clock)
    ended: dict[str, str] = {}
    try:
        next(stream)  # the start: what the stream follows from
        for job_id in wanted:
            state = str(client.job(job_id)["state"])
            if state in TERMINAL:
                ended[job_id] = state
        for message in stream if len(ended) < len(wanted) else ():
            for change in message.data.get("changes", []):
                job = change["job"]
                if job["id"] in wanted and job["state"] in TERMINAL:
                    ended[job["id"]] = job["state"]
            if len(ended) == len(wanted):
                break
    finally:
        stream.close()
    return {job_id: ended[job_id] for job_id in wanted}


async def in_thread(iterator: Iterator[T]) -> AsyncIterator[T]:
    """A blocking iterator's items, each read in a worker thread, so the event loop never waits on it."""
    done = object()
    while True:
        item = await asyncio.to_thread(next, iterator, done)
        if item is done:
            return
        yield item  # type: ignore[misc]
