"""The agent's credential in a Kubernetes Secret (``--credential-secret``): written at join, replaced at a
re-join, read by a restarted or rescheduled agent, which so reports again without a new join token."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from federation.launcher import FedqProcess, ServerProcess, wait_until
from member_agent.credentials import Credential
from member_agent.k8s_credentials import KEY, SecretCredentials, parse_secret_ref
from tests.k8s.conftest import stub_api_client
from tests.k8s.stub_api import StubApiServer

ADMIN = "fedq_admin_secret-test"
SECRET = ("fedq-system", "fedq-agent-credential")
CLUSTER = "k8s-a"


def stored(stub: StubApiServer) -> dict[str, Any]:
    secret = stub.secret(*SECRET)
    assert secret is not None, "no credential Secret"
    return dict(json.loads(base64.b64decode(secret["data"][KEY])))


def test_a_credential_outlives_the_client_that_saved_it_and_a_rejoin_replaces_it(stub: StubApiServer) -> None:
    first, later = stub_api_client(stub), stub_api_client(stub)  # two pods' clients: nothing shared but the API
    try:
        store = SecretCredentials(first, *SECRET)
        with pytest.raises(ValueError, match="no credential in Secret fedq-system/fedq-agent-credential: run"):
            store.load()
        store.save(Credential("https://fed", CLUSTER, "fedq_cluster_one", lease=90.0))
        uid = stub.secret(*SECRET)["metadata"]["uid"]  # type: ignore[index]
        assert SecretCredentials(later, *SECRET).load() == Credential("https://fed", CLUSTER, "fedq_cluster_one", 90.0)
        store.save(Credential("https://fed", CLUSTER, "fedq_cluster_two"))
        secret = stub.secret(*SECRET)
        assert secret is not None and secret["metadata"]["uid"] == uid, "replaced in place, not made anew"
        assert secret["metadata"]["labels"]["app.kubernetes.io/part-of"] == "fedq" and secret["type"] == "Opaque"
        assert SecretCredentials(later, *SECRET).load().token == "fedq_cluster_two"
    finally:
        first.close()
        later.close()


@pytest.mark.parametrize("ref", ["fedq-agent-credential", "/name", "ns/", "a/b/c"])
def test_a_secret_is_named_namespace_slash_name(ref: str) -> None:
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        parse_secret_ref(ref)


def _report_age(server: ServerProcess) -> float | None:
    reply = httpx.get(f"{server.url}/v1/clusters", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=5)
    items = reply.json()["items"]  # empty until the first join
    age = items[0]["last_report_age"] if items else None
    return None if age is None else float(age)


def _join_token(server: ServerProcess) -> str:
    reply = httpx.post(f"{server.url}/v1/clusters/{CLUSTER}/tokens", headers={"Authorization": f"Bearer {ADMIN}"})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["token"])


def _pod(tmp_path: Path, name: str, args: list[str]) -> FedqProcess:
    """An agent process with a home of its own, as a new pod has: nothing on disk from an earlier one."""
    home = tmp_path / name
    home.mkdir()
    return FedqProcess(["agent", *args], tmp_path / f"{name}.log", env={"HOME": str(home)}).start()


def _await(condition: Callable[[], bool], pod: FedqProcess, what: str) -> None:
    try:
        wait_until(condition, 60, what)
    except TimeoutError:
        pytest.fail(f"timed out waiting for {what}; its log:\n{pod.log()}")


def test_a_rescheduled_agent_pod_reports_again_without_a_new_token(
    tmp_path: Path, stub: StubApiServer, kubeconfig: Path
) -> None:
    stub.add_node("node-a")
    config = tmp_path / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": CLUSTER,
                "backend": "kubernetes",
                "reportInterval": "200ms",
                "credentialSecret": "/".join(SECRET),
                "kubernetes": {"kubeconfig": str(kubeconfig)},
            }
        )
    )
    with ServerProcess(None, tmp_path / "server.log", env={"FEDQ_ADMIN_TOKEN": ADMIN}) as server:
        assert isinstance(server, ServerProcess)
        token = _join_token(server)
        first = _pod(tmp_path, "pod-1", ["join", "--server", server.url, "--token", token, "--config", str(config)])
        _await(lambda: _report_age(server) is not None, first, "the first pod to report")
        credential = stored(stub)
        assert credential["cluster"] == CLUSTER and credential["server"] == server.url
        first.kill()  # the pod is deleted: its memory and disk are gone
        killed = time.monotonic()

        second = _pod(tmp_path, "pod-2", ["run", "--config", str(config)])  # no token: it could not join

        def reported_since_the_kill() -> bool:
            age, since = _report_age(server), time.monotonic() - killed
            return age is not None and since > 1.0 and age < since - 0.5

        _await(reported_since_the_kill, second, "the rescheduled pod to report")
        assert second.alive, second.log()
        assert "joined" not in second.log()
        assert stored(stub) == credential, "the Secret is read, not written, by a pod that only runs"
        spent = httpx.post(f"{server.url}/v1/clusters/join", json={"token": token, "name": CLUSTER})
        assert spent.status_code in (401, 403), "the join token is single-use and was spent once, by the first pod"
        second.stop()

        rejoin = ["join", "--server", server.url, "--token", _join_token(server), "--config", str(config), "--no-run"]
        third = _pod(tmp_path, "pod-3", rejoin)
        assert third.process is not None and third.process.wait(timeout=60) == 0, third.log()
        rotated = stored(stub)
        assert rotated["token"] != credential["token"], "a re-join replaces the credential in the Secret"
        old = httpx.post(
            f"{server.url}/v1/clusters/{CLUSTER}/report",
            json={"nodes": []},
            headers={"Authorization": f"Bearer {credential['token']}"},
        )
        assert old.status_code == 401, "the credential a re-join replaced no longer works"
