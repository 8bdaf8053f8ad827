"""``FedqClient`` naming several replicas (issue 33, point 7): a call that cannot connect to one goes
to the next at once, and later calls stay there; with every replica down the call fails as before,
naming the server (status 0). Real loopback sockets: a small HTTP server, and a port nobody listens on."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from federation.client import FedqClient, FedqError
from federation.launcher import free_port


class _Healthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"ok": True, "port": self.server.server_address[1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        """Quiet: the test prints its own figures."""


@pytest.fixture
def replica() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_call_goes_on_to_the_next_replica_when_one_cannot_be_reached(replica: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with FedqClient(f"{down}, {replica}/") as client:
        assert client.servers == [down, replica]
        assert client.request("GET", "/healthz")["ok"]
        assert client.server == replica
        assert client.request("GET", "/healthz")["ok"] and client.server == replica  # stays on the one that answers


def test_one_server_works_as_before_and_all_down_fail_naming_the_server(replica: str) -> None:
    with FedqClient(replica) as client:
        assert client.request("GET", "/healthz")["ok"]
    down = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    with FedqClient(",".join(down)) as client, pytest.raises(FedqError) as refused:
        client.request("GET", "/healthz")
    assert refused.value.status == 0 and "cannot reach the fedq server at http://127.0.0.1:" in str(refused.value)
    with pytest.raises(ValueError, match="no server URL"):
        FedqClient(" , ")
