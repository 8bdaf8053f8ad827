"""The fedq API over the standard library's ``http.client``: for a CLI command that reads once (``fedq jobs``,
``fedq job``, ``fedq explain``). It imports in a few milliseconds where httpx takes ~55-90 ms, a fifth of
such a command's whole run. What a client shares (replicas, TLS files, errors, the calls) is
``federation.client_base``'s; streams (``--watch``, ``--follow``) need ``federation.client.FedqClient``."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlencode, urlsplit

from federation.client_base import ApiClient, Unreached


class QuickClient(ApiClient):
    """``ApiClient`` over one ``http.client`` connection per replica, kept open for the command's calls."""

    def _start(self) -> None:
        self._open: dict[int, http.client.HTTPConnection] = {}

    def close(self) -> None:
        for connection in self._open.values():
            connection.close()
        self._open.clear()

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, str]:
        """The current replica's connection (connected, ``timeout`` for each wait on it) and its path prefix."""
        url = urlsplit(self.server)
        connection = self._open.get(self._current)
        if connection is None:
            if url.scheme == "https":
                connection = http.client.HTTPSConnection(url.netloc, timeout=timeout, context=self._tls)
            else:
                connection = http.client.HTTPConnection(url.netloc, timeout=timeout)
            self._open[self._current] = connection
        connection.timeout = timeout
        try:
            if connection.sock is None:
                connection.connect()
            connection.sock.settimeout(timeout)
        except OSError as exc:  # refused, timed out, or the TLS handshake failed: nothing was sent
            self._drop()
            raise Unreached(exc, unsent=True) from None
        return connection, url.path

    def _drop(self) -> None:
        connection = self._open.pop(self._current, None)
        if connection is not None:
            connection.close()

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        params: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
    ) -> tuple[int, str, bytes]:
        connection, prefix = self._connection(timeout)
        query = urlencode([(key, _text(item)) for key, value in params.items() for item in _items(value)])
        target = prefix + path + (f"?{query}" if query else "")
        try:
            connection.request(method, target, body=content, headers={**self._headers, **headers})
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            raise Unreached(exc, unsent=False) from None
        if response.will_close:
            self._drop()
        return response.status, response.reason, answer


def _items(value: Any) -> list[Any]:
    """A query parameter's values: a list or tuple is the parameter repeated, as httpx sends it."""
    return list(value) if isinstance(value, list | tuple) else [value]


def _text(value: Any) -> str:
    """A query value as httpx writes it: booleans in lower case."""
    return str(value).lower() if isinstance(value, bool) else str(value)
