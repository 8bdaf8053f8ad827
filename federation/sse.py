"""The wire format of job event streams: Server-Sent Events (``text/event-stream``), written by the API and
read by the client, in one place.

Each message is one store revision: ``id`` is that revision (everything the stream shows up to it has
been sent), ``event`` its kind and ``data`` one line of JSON. A client that reconnects sends the last
``id`` it read (``Last-Event-ID`` or ``?since=``) and misses nothing, repeats nothing. A comment line
(``: keepalive``) now and then keeps an idle stream's connection alive and lets either side notice a
dead one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MEDIA_TYPE = "text/event-stream"
KEEPALIVE = b": keepalive\n\n"


@dataclass(frozen=True)
class Message:
    event: str
    data: dict[str, Any]
    id: int | None = None

    def encode(self) -> bytes:
        head = "" if self.id is None else f"id: {self.id}\n"
        return f"{head}event: {self.event}\ndata: {json.dumps(self.data, separators=(',', ':'))}\n\n".encode()


class Reader:
    """Lines in, whole messages out (``feed`` answers one when a blank line ends it)."""

    def __init__(self) -> None:
        self._event = "message"
        self._data: list[str] = []
        self._id: int | None = None

    def feed(self, line: str) -> Message | None:
        if not line:
            if not self._data:
                return None
            message = Message(self._event, json.loads("\n".join(self._data)), self._id)
            self._event, self._data, self._id = "message", [], None
            return message
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and value.isdigit():
            self._id = int(value)
        return None
