"""What every fedq API client shares, whatever carries its requests: the replicas and when a call moves on
to the next, the TLS files, how a refusal or an unreachable server reads, and the calls built on a plain
request. ``federation.client.FedqClient`` carries them over httpx (pooled, streams: agents, ``--watch``);
``federation.quick_client.QuickClient`` over the standard library, for a CLI command that reads once
(httpx's import is a fifth of ``fedq jobs``'s start-up)."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from typing import Any, Self

UNTRUSTED = "CERTIFICATE_VERIFY_FAILED"
"""OpenSSL's words for a certificate no trusted CA signed: the error then says which option to pass."""


class FedqError(Exception):
    """The server refused a request, or could not be reached; ``status`` is 0 for the latter."""

    def __init__(self, status: int, message: str, fields: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.fields = fields or []

    def __str__(self) -> str:
        """The message, then each field it does not already say (the API's message names the first few:
        ``invalid job spec: spec.queue: ...``), so nothing is printed twice."""
        lines = [f"{self.message} (HTTP {self.status})" if self.status else self.message]
        named = (f"{f['field']}: {f['message']}" for f in self.fields)
        lines += [f"  {line}" for line in named if line not in self.message]
        return "\n".join(lines)


class Unreached(Exception):
    """A transport's failure to get an answer: ``unsent`` when it could not even connect (nothing was
    sent, so the next replica may take the call at once)."""

    def __init__(self, cause: Exception, *, unsent: bool) -> None:
        super().__init__(str(cause))
        self.unsent = unsent


def replica_urls(server: str) -> list[str]:
    """``server``'s comma-separated URLs, each without a trailing slash; ValueError for none."""
    urls = [url.strip().rstrip("/") for url in server.split(",") if url.strip()]
    if not urls:
        raise ValueError(f"no server URL in {server!r}: give one, or several separated by commas")
    return urls


def tls_context(ca: str | None, cert: tuple[str, str] | None) -> ssl.SSLContext:
    """Trust ``ca`` (None: the system's CAs, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), and present ``cert``
    (a certificate and its key) to a server that asks for one. ValueError for files that cannot be used."""
    try:
        context = ssl.create_default_context(cafile=ca)
        if cert is not None:
            context.load_cert_chain(*cert)
    except (OSError, ssl.SSLError) as exc:
        files = ", ".join(name for name in (ca, *(cert or ())) if name)
        raise ValueError(f"cannot use the TLS files {files}: {exc}") from None
    return context


def refusal(status: int, content: bytes, reason: str) -> FedqError:
    """An error answer as ``FedqError``: the API's ``{"error", "fields"}``, else the body or the reason."""
    try:
        payload = json.loads(content)
    except ValueError:
        payload = {"error": content.decode(errors="replace") or reason}
    return FedqError(status, str(payload.get("error", payload)), payload.get("fields"))


class ApiClient:
    """A client of one or several replicas (``https://a:8443,https://b:8443``): every replica answers
    every call, so one that cannot be reached is passed over for the next, in order. A call that could
    not connect goes to the next at once (nothing was sent); any other failure to get an answer is
    raised, and the next call starts with the next replica. A transport implements ``_send``."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        ca: str | None = None,
        cert: tuple[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        """``ca``: the PEM file of the CA that signed an https server's certificate (None: the system's);
        ``cert``: a client certificate and its key, for a server that requires one (mutual TLS)."""
        self.servers = replica_urls(server)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._current = 0  # the replica calls go to until one fails
        # Plain http needs no TLS context: the system's CAs take ~50 ms to load.
        self._tls = tls_context(ca, cert) if any(url.startswith("https:") for url in self.servers) else None
        self._start()

    def _start(self) -> None:
        """Set the transport up for ``servers`` (with ``_tls`` for those over https)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the transport's connections."""
        raise NotImplementedError

    @property
    def server(self) -> str:
        """The replica calls go to now."""
        return self.servers[self._current]

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        params: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
    ) -> tuple[int, str, bytes]:
        """One request to the current replica: its status, reason phrase and body; ``Unreached`` if none came."""
        raise NotImplementedError

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """``timeout`` (seconds) overrides the client's for this call (an agent's report within its lease);
        a call passed on to the next replica has what is left of it."""
        content = None if body is None else json.dumps(body).encode()
        headers = {**({"Content-Type": "application/json"} if content is not None else {}), **(headers or {})}
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        deadline = time.monotonic() + (timeout or self._timeout)
        for left in reversed(range(len(self.servers))):
            try:
                status, reason, answer = self._send(method, path, content, clean, headers, deadline - time.monotonic())
                break
            except Unreached as exc:
                error = self._unreachable(exc)
                if not (left and exc.unsent and deadline - time.monotonic() > 0):
                    raise error from None
        if status >= 400:
            raise refusal(status, answer, reason)
        return json.loads(answer) if answer else None

    def _unreachable(self, exc: Exception) -> FedqError:
        """The error of a call that got no answer; the next call goes to the next replica."""
        hint = "; pass the CA that signed its certificate: --ca FILE or FEDQ_CA" if UNTRUSTED in str(exc) else ""
        error = FedqError(0, f"cannot reach the fedq server at {self.server}: {exc}{hint}")
        self._current = (self._current + 1) % len(self.servers)
        return error

    def jobs(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every job matching the filters (``state``: one, or a list of them), in the API's order (state,
        queue, id), following ``continue`` until it is null: a page may be short, even empty, while more
        remain. A page is the index at one revision, but pages are read one by one: a job that changes state
        between two pages may come twice or not at all."""
        params = dict(filters)
        while True:
            page = self.request("GET", "/v1/jobs", params=params)
            yield from page["items"]
            if not page.get("continue"):
                return
            params["continue"] = page["continue"]

    def job(self, job_id: str) -> dict[str, Any]:
        """One job's record (``JobRecord``): spec, state, times in epoch seconds, its event history."""
        result: dict[str, Any] = self.request("GET", f"/v1/jobs/{job_id}")
        return result

    def logs(
        self,
        job_id: str,
        *,
        task: str | None = None,
        stream: str | None = None,
        tail: int | None = None,
        since: float | None = None,
        epoch: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The job's output lines ``{time, task, stream, text}``, oldest first: its latest run's (or
        ``epoch``'s), of one ``task`` (name, index or name-index) and ``stream`` (stdout, stderr), the
        last ``tail``, printed in the last ``since`` seconds."""
        params = {"task": task, "stream": stream, "tail": tail, "since_seconds": since, "epoch": epoch}
        answer: dict[str, Any] = self.request("GET", f"/v1/jobs/{job_id}/logs", params=params)
        return iter(answer["lines"])

    def whoami(self) -> dict[str, Any]:
        """``{"role", "name", "token_id"}`` of this client's token."""
        result: dict[str, Any] = self.request("GET", "/v1/whoami")
        return result

    def queues(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/v1/queues")
        return result
