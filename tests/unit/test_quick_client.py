"""``QuickClient``, the standard library's transport of the one-shot CLI reads (issue 36, point 4), against
``FedqClient`` on the same real loopback servers: the same request on the wire (method, path, query,
token, body), the same answers, the same refusals, the same replica failover, and over TLS the same
trust: the CA given, else a refusal that says to pass ``--ca``."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from federation.client import FedqClient
from federation.client_base import ApiClient, FedqError
from federation.launcher import free_port
from federation.quick_client import QuickClient
from federation.tls import LOOPBACK_NAMES, ThrowawayCA

CLIENTS = [QuickClient, FedqClient]


class _Recording(BaseHTTPRequestHandler):
    """Answers ``/v1/jobs/missing`` with the API's 404, anything else with what it was asked."""

    protocol_version = "HTTP/1.1"  # keeps the connection open, as uvicorn does

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        asked = {
            "method": self.command,
            "path": self.path,
            "authorization": self.headers.get("Authorization"),
            "type": self.headers.get("Content-Type"),
            "body": self.rfile.read(length).decode(),
        }
        status, answer = (200, asked)
        if self.path == "/v1/jobs/missing":
            status = 404
            answer = {"error": "job 'missing' not found", "fields": [{"field": "id", "message": "unknown"}]}
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        """Quiet."""


def _serving(tls: ssl.SSLContext | None = None) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def replica() -> Iterator[str]:
    yield from _serving()


def test_both_transports_send_and_answer_alike(replica: str) -> None:
    seen: dict[str, list[Any]] = {}
    for kind in CLIENTS:
        with kind(replica, "t0k") as client:
            asked = client.request("GET", "/v1/jobs", params={"state": ["Pending", "Running"], "all": True, "x": None})
            posted = client.request("POST", "/v1/jobs/j/hold", body={"why": "test"})
            with pytest.raises(FedqError) as refused:
                client.job("missing")
            seen[kind.__name__] = [asked, posted, refused.value.status, str(refused.value)]
    print(json.dumps(seen, indent=1))
    assert seen["QuickClient"] == seen["FedqClient"]
    assert seen["QuickClient"][0]["path"] == "/v1/jobs?state=Pending&state=Running&all=true"
    assert seen["QuickClient"][0]["authorization"] == "Bearer t0k"


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_replica_that_cannot_be_reached_is_passed_over(kind: type[ApiClient], replica: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with kind(f"{down},{replica}/") as client:  # type: ignore[call-arg]
        assert client.request("GET", "/healthz")["method"] == "GET"
        assert client.server == replica
    with kind(down) as client, pytest.raises(FedqError) as refused:  # type: ignore[call-arg]
        client.queues()
    assert refused.value.status == 0 and f"cannot reach the fedq server at {down}" in str(refused.value)


@pytest.mark.parametrize("kind", CLIENTS)
def test_over_tls_the_ca_given_is_trusted_and_an_untrusted_server_says_what_to_pass(
    kind: type[ApiClient], tmp_path: Path
) -> None:
    ca = ThrowawayCA(tmp_path / "ca", time.time())  # TLS checks certificates against the wall clock
    served = ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(served.cert, served.key)
    for url in _serving(tls):
        with kind(url, ca=str(ca.cert)) as trusting:  # type: ignore[call-arg]
            assert trusting.whoami()["path"] == "/v1/whoami"
        with kind(url) as untrusting, pytest.raises(FedqError) as refused:  # type: ignore[call-arg]
            untrusting.whoami()
        print(refused.value)
        assert refused.value.status == 0 and "--ca FILE or FEDQ_CA" in str(refused.value)
    with pytest.raises(ValueError, match="cannot use the TLS files"):
        kind("https://127.0.0.1:9", ca=str(tmp_path / "none.pem"))  # type: ignore[call-arg]
