"""Agents' reports take turns: at most ``REPORTS_AT_ONCE`` are served at a time by a replica, the rest
wait for a turn before any of their work begins (issue 33, point 6).

A hundred agents report every second, each report a few milliseconds of the replica's one event loop.
Let in all at once, a burst of them fills the loop's ready queue, and each step of any other request (a
submit has several: its reads, its txn) waits behind every one of them. Taking turns, a step waits
behind a few report steps at most, and the reports still get all the loop the rest leave. A report that
waits is still answered, in the order it came (an agent's lease is many seconds); its wait counts in the
report route's latency (``fedq_api_request_seconds``). Plain ASGI, around the application: a report
waiting for its turn has cost only its TLS and HTTP parsing.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

REPORTS_AT_ONCE = 4
"""Reports served at once per replica: enough that one waiting on the store does not idle the others
(a report is mostly a round trip to etcd), few enough to keep a submit's steps near the loop's front."""


def is_report(scope: Scope) -> bool:
    """``POST /v1/clusters/{name}/report``."""
    path: str = scope["path"]
    return (
        scope["method"] == "POST"
        and path.startswith("/v1/clusters/")
        and path.endswith("/report")
        and path.count("/") == 4
    )


class ReportTurns:
    def __init__(self, app: ASGIApp, at_once: int = REPORTS_AT_ONCE) -> None:
        self.app = app
        self._turns = asyncio.Semaphore(at_once)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_report(scope):
            await self.app(scope, receive, send)
            return
        async with self._turns:
            await self.app(scope, receive, send)
