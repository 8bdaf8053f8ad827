"""What a client may hold of the API server before it is cut off (issue 33): a bounded number of
connections, and a time limit on each part a client sends (the TLS handshake, a request's headers,
its body), so slow clients cannot hold sockets and memory for ever.

uvicorn times out only an idle keep-alive connection (reset by every byte, so a client sending a
byte every few seconds is never cut) and leaves the TLS handshake to asyncio's 60 s default. So the
server runs uvicorn's h11 protocol with these guards around it, and does the TLS handshake itself
(``loop.start_tls``, which takes a timeout) once the connection has counted against the limit.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from federation.config import ApiLimits
from policies.units import format_duration

LINGER = 1.0
"""Seconds a connection answered 408 stays open, its input read and dropped, before it closes: closed at
once, a byte the client sends next makes the kernel reset the connection, and the client's own kernel
may drop the 408 it had not read yet (Apache's lingering close, for the same reason)."""


@dataclass(frozen=True)
class Guards:
    """The limits (``api.maxConnections``, ``api.handshakeTimeout``, ``api.headerTimeout``,
    ``api.bodyTimeout``) and the TLS context the server's connections are held to (None: plain http)."""

    max_connections: int
    handshake_timeout: float
    header_timeout: float
    body_timeout: float
    tls: ssl.SSLContext | None

    @classmethod
    def of(cls, api: ApiLimits, tls: ssl.SSLContext | None) -> Guards:
        return cls(api.max_connections, api.handshake_timeout, api.header_timeout, api.body_timeout, tls)


def _timed_out(what: str, key: str, seconds: float) -> bytes:
    """A whole 408 answer, written past h11 (which cannot answer a request whose head never came)."""
    body = json.dumps({"error": f"{what} did not arrive within {format_duration(seconds)} ({key})", "fields": []})
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, under ``guards``; ``open`` holds the server's connections, TLS handshakes
    included (one class per server: ``guarded``)."""

    guards: ClassVar[Guards]
    open: ClassVar[set[GuardedH11Protocol]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._serving = False  # uvicorn's connection_made ran (after the handshake, on TLS)
        self._early: list[bytes] = []  # TLS 1.3: a request may come with the handshake's last message
        self._phase: str | None = None  # what the timer waits for: "head" or "body"
        self._timer: asyncio.TimerHandle | None = None
        self._lingering = False  # answered 408: what comes is dropped until the connection closes

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if len(self.open) >= self.guards.max_connections:
            transport.abort()  # refused at once: the server holds as many connections as it may
            return
        self.open.add(self)
        if self.guards.tls is None:
            self._serve(transport)
            return
        transport.pause_reading()  # nothing is read before the handshake takes the transport over
        self.loop.create_task(self._handshake(transport, self.guards.tls))

    async def _handshake(self, raw: asyncio.Transport, tls: ssl.SSLContext) -> None:
        timeout = self.guards.handshake_timeout
        try:
            secured = await self.loop.start_tls(
                raw, self, tls, server_side=True, ssl_handshake_timeout=timeout, ssl_shutdown_timeout=timeout
            )
        except (OSError, TimeoutError):  # too slow, not TLS, or a certificate refused: start_tls closed it
            self.open.discard(self)
            return
        if secured is None:  # the client went away as the handshake ended
            self.open.discard(self)
            return
        self._serve(secured)

    def _serve(self, transport: asyncio.Transport) -> None:
        self._serving = True
        super().connection_made(transport)
        self._arm("head")
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.open.discard(self)
        self._disarm()
        if self._serving:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        if not self._serving:
            self._early.append(data)  # before start_tls has returned: served with the rest
            return
        if self._phase is None and self.conn.their_state is h11.IDLE:
            self._arm("head")  # the first byte of a request after a previous one: its head is timed from here
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def _follow(self) -> None:
        """Time the part of the request the client is sending now, if any."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body")
        elif state is not h11.IDLE or self._phase == "body":
            self._disarm()  # the request is in; a response may then take as long as it takes (a stream)

    def _arm(self, phase: str) -> None:
        self._disarm()
        seconds = self.guards.header_timeout if phase == "head" else self.guards.body_timeout
        self._phase = phase
        self._timer = self.loop.call_later(seconds, self._late)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._phase = None, None

    def _late(self) -> None:
        """The client took too long: a 408 if nothing was answered yet, then the connection closes, after
        ``LINGER`` if it was answered (the app reading the body sees the client gone)."""
        phase, self._timer, self._phase = self._phase, None, None
        if self.transport.is_closing():
            return
        if phase == "head":
            answer = _timed_out("the request's headers", "api.headerTimeout", self.guards.header_timeout)
        elif self.cycle is not None and not self.cycle.response_started:
            answer = _timed_out("the request's body", "api.bodyTimeout", self.guards.body_timeout)
        else:
            self.transport.close()
            return
        self.transport.write(answer)
        self._lingering = True
        self.loop.call_later(LINGER, self.transport.close)


def guarded(guards: Guards) -> type[GuardedH11Protocol]:
    """The protocol class for one server (uvicorn's ``http=``): its own guards and its own count."""
    return type("Guarded", (GuardedH11Protocol,), {"guards": guards, "open": set()})


def server_tls(cert: str, key: str, client_ca: str | None) -> ssl.SSLContext:
    """The server's TLS: its certificate, and with ``client_ca`` every client must show one it signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if client_ca is not None:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
