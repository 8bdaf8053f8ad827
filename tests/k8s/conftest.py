"""Fixtures for the Kubernetes backend's tests: a stub API server per test and backends bound to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from member_agent.backends.kubernetes import KubernetesBackend
from member_agent.k8s_credentials import SecretCredentials
from policies.clock import ManualClock
from tests.k8s.stub_api import ApiError, StubApiServer

MakeBackend = Callable[..., KubernetesBackend]
MARKER_NODE = "marker"


@pytest.fixture
def stub() -> Iterator[StubApiServer]:
    server = StubApiServer().start()
    yield server
    server.stop()
    assert server.errors == [], "the stub API server failed on a request"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture
def kubeconfig(tmp_path: Path, stub: StubApiServer) -> Path:
    """A kubeconfig file that points at the stub."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stub", "cluster": {"server": stub.url}}],
                "users": [{"name": "agent", "user": {"token": "stub-token"}}],
                "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "agent"}}],
                "current-context": "stub",
            }
        )
    )
    return path


def stub_api_client(stub: StubApiServer) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = stub.url
    return client.ApiClient(configuration)


@pytest.fixture
def make_backend(stub: StubApiServer, clock: ManualClock) -> Iterator[MakeBackend]:
    """Backends on the stub, each with an ApiClient of its own; all closed at teardown."""
    opened: list[tuple[KubernetesBackend | None, client.ApiClient]] = []

    def make(**settings: Any) -> KubernetesBackend:
        api = stub_api_client(stub)
        opened.append((None, api))
        backend = KubernetesBackend(api, clock=clock, **settings)
        opened[-1] = (backend, api)
        return backend

    yield make
    for backend, api in opened:
        if backend is not None:
            backend.close()
        api.close()


class StubCluster:
    """The scenarios' driver for the stub: the test plays the kubelet."""

    timeout = 10.0
    image = "python:3.12-slim"
    secrets_namespace = "fedq-system"

    def __init__(self, stub: StubApiServer, make: MakeBackend) -> None:
        self.stub = stub
        self._make = make
        self._markers = 0
        self.clients: list[client.ApiClient] = []

    def credentials(self, name: str) -> SecretCredentials:
        self.clients.append(stub_api_client(self.stub))
        return SecretCredentials(self.clients[-1], self.secrets_namespace, name)

    def make_backend(self, **settings: Any) -> KubernetesBackend:
        return self._make(**settings)

    def pick_nodes(self, backend: KubernetesBackend, count: int) -> list[str]:
        names = sorted(v.name for v in backend.nodes() if not v.unschedulable)
        return [names[i % len(names)] for i in range(count)]

    def run(self, pod: str) -> None:
        self.stub.start_pod(pod)

    def exit(self, pod: str, code: int) -> None:
        self.stub.finish_pod(pod, code)

    def terminate(self, pod: str) -> None:
        self.stub.finish_termination(pod)

    def overrun(self, pod: str) -> None:
        self.stub.exceed_deadline(pod)

    def occupy(self, node: str, name: str, requests: dict[str, str]) -> None:
        self.stub.add_pod("default", name, node=node, requests=requests)

    def precreate(self, name: str) -> None:
        self.stub.add_pod(self.stub.job_namespace, name, phase="Pending")

    def pod(self, name: str) -> dict[str, Any] | None:
        try:
            return self.stub.pod(name)
        except ApiError:
            return None

    def settle(self, backend: KubernetesBackend) -> None:
        """A barrier: pod events arrive in one ordered watch, so once the next marker pod shows on the
        marker node (which nothing else uses), every pod event before it has been processed."""
        self._markers += 1
        self.stub.add_pod("default", f"marker-{self._markers}", node=MARKER_NODE)

        def arrived() -> bool:
            view = next(v for v in backend.nodes() if v.name == MARKER_NODE)
            return view.used.get("pods") == self._markers

        assert backend.wait_until(arrived, self.timeout), "the marker pod never reached the backend"


@pytest.fixture
def cluster(stub: StubApiServer, make_backend: MakeBackend) -> Iterator[StubCluster]:
    """Three 8-core nodes on the stub, and a cordoned one that only settle()'s markers use."""
    for name in ("node-a", "node-b", "node-c"):
        stub.add_node(name, cpu="8", memory="32Gi")
    stub.add_node(MARKER_NODE, unschedulable=True)
    driver = StubCluster(stub, make_backend)
    yield driver
    for api in driver.clients:
        api.close()
