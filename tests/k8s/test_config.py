"""How the backend finds its API server: kubeconfig (file or $KUBECONFIG), in-cluster, or a given client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.config import incluster_config
from pydantic import ValidationError

from member_agent.backends.k8s_config import KubernetesSettings, load_api_client
from member_agent.backends.kubernetes import KubernetesBackend
from policies.clock import ManualClock
from tests.k8s.stub_api import StubApiServer


@pytest.fixture
def closing() -> Iterator[list[KubernetesBackend]]:
    backends: list[KubernetesBackend] = []
    yield backends
    for backend in backends:
        backend.close()


def test_from_config_with_a_kubeconfig(kubeconfig: Path, stub: StubApiServer, closing: list[KubernetesBackend]) -> None:
    stub.add_node("node-a")
    backend = KubernetesBackend.from_config(
        {"namespace": "fedq-jobs", "kubeconfig": str(kubeconfig), "killGraceSeconds": 5, "listPageSize": 10},
        clock=ManualClock(),
    )
    closing.append(backend)
    assert [v.name for v in backend.nodes()] == ["node-a"]
    assert (backend.settings.kill_grace_seconds, backend.settings.list_page_size) == (5, 10)


def test_kubeconfig_from_the_environment_at_call_time(
    kubeconfig: Path, stub: StubApiServer, monkeypatch: pytest.MonkeyPatch, closing: list[KubernetesBackend]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    stub.add_node("node-b")
    backend = KubernetesBackend(clock=ManualClock())
    closing.append(backend)
    assert [v.name for v in backend.nodes()] == ["node-b"]
    assert any(r.path == "/api/v1/nodes" for r in stub.requests)


@pytest.mark.parametrize(
    ("values", "field"),
    [({"killGraceSeconds": -1}, "killGraceSeconds"), ({"namespce": "x"}, "namespce"), ({"namespace": ""}, "namespace")],
)
def test_bad_settings_name_the_field(values: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        KubernetesBackend.from_config(values)


def test_kubeconfig_and_in_cluster_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="exclusive"):
        load_api_client(KubernetesSettings(kubeconfig="/x", in_cluster=True))


@pytest.fixture
def pod_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What the kubelet gives a pod: service host/port in the environment, token and CA as files."""
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text("not checked until a connection is made")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return ca


@pytest.mark.parametrize("settings", [KubernetesSettings(in_cluster=True), KubernetesSettings()])
def test_in_cluster_config(pod_identity: Path, settings: KubernetesSettings) -> None:
    """Chosen explicitly, or by default when running in a pod with no kubeconfig given."""
    api = load_api_client(settings)
    try:
        assert api.configuration.host == "https://10.96.0.1:443"
        assert api.configuration.ssl_ca_cert == str(pod_identity)
        assert api.configuration.get_api_key_with_prefix("BearerToken").lower() == "bearer sa-token"
    finally:
        api.close()
