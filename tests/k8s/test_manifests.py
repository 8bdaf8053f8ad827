"""configs/k8s/: schema-valid, accepted by ``kubectl apply --dry-run=client``, and granting the agent exactly
the API calls the backend makes (checked against what the stub API server saw while the scenarios ran)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.k8s.conftest import StubCluster
from tests.k8s.scenarios import SCENARIOS, collect, gang, name_of, new_job_id
from tests.k8s.stub_api import Request, StubApiServer

MANIFESTS = Path(__file__).resolve().parents[2] / "configs" / "k8s"
AGENT = ("fedq-system", "fedq-agent")  # the ServiceAccount the agent runs as
JOBS_NAMESPACE = "fedq-jobs"
_NAMESPACED = re.compile(r"^/api/v1/namespaces/([^/]+)/(pods)(?:/[^/]+(/binding)?)?$")

Permission = tuple[str | None, str, str]  # (namespace or None for cluster-wide, resource, verb)


def documents() -> list[dict[str, Any]]:
    docs = [doc for path in sorted(MANIFESTS.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]
    return [doc for doc in docs if doc]


def test_manifests_are_schema_valid() -> None:
    """Each object parses with the official client's model of its kind (unknown fields and wrong types refused)."""
    kinds = []
    for doc in documents():
        model = getattr(client, f"V1{doc['kind']}")
        model.from_dict(doc)
        kinds.append(doc["kind"])
    assert sorted(kinds) == sorted(
        ["Namespace"] * 2
        + ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment"]
    )


def agent_container() -> dict[str, Any]:
    (deployment,) = [d for d in documents() if d["kind"] == "Deployment"]
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    pod = spec["template"]["spec"]
    assert (deployment["metadata"]["namespace"], pod["serviceAccountName"]) == AGENT
    (container,) = pod["containers"]
    return dict(container)


def test_agent_token_comes_from_the_secret() -> None:
    env = {e["name"]: e for e in agent_container()["env"]}
    assert env["FEDQ_JOIN_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "fedq-join", "key": "token"}


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_agent_joins_once_then_runs_with_its_credential(tmp_path: Path) -> None:
    """Run the container's script with a stand-in ``fedq`` that records its arguments (and, on join,
    stores a credential as the real one does): the first start joins, a restart runs."""
    container = agent_container()
    fake = tmp_path / "bin" / "fedq"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$*" >> "$CALLS"\n[ "$2" = join ] && echo "{}" > "$FEDQ_CREDENTIAL"\nexit 0\n'
    )
    fake.chmod(0o755)
    env = {
        "PATH": f"{fake.parent}:/usr/bin:/bin",
        "CALLS": str(tmp_path / "calls"),
        "FEDQ_CREDENTIAL": str(tmp_path / "credential.json"),
        "FEDQ_SERVER": "https://fed.example",
        "FEDQ_JOIN_TOKEN": "tok-123",
        "FEDQ_CLUSTER_NAME": "west",
    }
    for _ in range(2):
        subprocess.run([*container["command"], *container["args"]], env=env, check=True, timeout=30)
    joined, ran = (tmp_path / "calls").read_text().splitlines()
    assert joined == (
        "agent join --server https://fed.example --token tok-123 --name west"
        f" --backend kubernetes --namespace {JOBS_NAMESPACE} --credential-file {env['FEDQ_CREDENTIAL']}"
    )
    assert ran == (
        "agent run --server https://fed.example --name west"
        f" --backend kubernetes --namespace {JOBS_NAMESPACE} --credential-file {env['FEDQ_CREDENTIAL']}"
    )


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_apply_dry_run(stub: StubApiServer) -> None:
    """kubectl maps every kind through the stub's discovery documents and would create each object.

    --validate=false: kubectl's client-side schema check downloads the server's OpenAPI document, which only
    a real API server serves; test_manifests_are_schema_valid does that check offline."""
    result = subprocess.run(
        ["kubectl", "--server", stub.url, "apply", "--dry-run=client", "--validate=false", "-f", f"{MANIFESTS}/"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    created = [line for line in result.stdout.splitlines() if line.endswith("created (dry run)")]
    assert len(created) == len(documents()), result.stdout
    assert {r.method for r in stub.requests} == {"GET"}, "a client-side dry run must change nothing"


def granted() -> set[Permission]:
    """What the manifests let the agent's ServiceAccount do, by namespace (None: everywhere)."""
    docs = documents()
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    out: set[Permission] = set()
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        subjects = {(s.get("namespace"), s["name"]) for s in binding["subjects"] if s["kind"] == "ServiceAccount"}
        if AGENT not in subjects:
            continue
        scope = binding["metadata"].get("namespace")  # None for a ClusterRoleBinding
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            assert rule["apiGroups"] == [""], "the backend only uses the core API group"
            out |= {(scope, res, verb) for res in rule["resources"] for verb in rule["verbs"]}
    assert not any("*" in (res, verb) for _, res, verb in out), "no wildcards"
    return out


def permission(request: Request) -> Permission:
    """The RBAC attributes of one request the backend made (only the kinds of request it makes)."""
    if request.method == "GET" and request.path in ("/api/v1/nodes", "/api/v1/pods"):
        verb = "watch" if request.query.get("watch") in ("true", "1") else "list"
        return None, request.path.rsplit("/", 1)[1], verb
    match = _NAMESPACED.match(request.path)
    assert match, f"unexpected request {request.method} {request.path}"
    namespace, resource, binding = match.groups()
    verb = {"POST": "create", "DELETE": "delete"}[request.method]
    return namespace, resource + (binding or ""), verb


def allowed(needed: Permission, grants: set[Permission]) -> bool:
    namespace, resource, verb = needed
    return (None, resource, verb) in grants or (namespace is not None and (namespace, resource, verb) in grants)


def test_rbac_grants_exactly_what_the_backend_uses(cluster: StubCluster, stub: StubApiServer) -> None:
    for scenario in SCENARIOS:
        scenario(cluster)
    backend = cluster.make_backend(keep_finished_seconds=0)
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    stub.start_pod(name_of(task))
    stub.finish_pod(name_of(task), 0)
    collect(backend, lambda got: any(s.phase.terminal for s in got), cluster.timeout)
    backend.poll()  # retention 0: deletes the finished pod

    needed = {permission(r) for r in stub.requests}  # the test drives the stub directly: every request is the backend's
    grants = granted()
    assert {p for p in needed if not allowed(p, grants)} == set(), "the backend needs rights the manifests lack"
    used = {(res, verb) for _, res, verb in needed}
    assert {(res, verb) for _, res, verb in grants} == used, "the manifests grant rights the backend never uses"
    assert {ns for ns, _, _ in needed if ns is not None} == {JOBS_NAMESPACE}
    assert {ns for ns, _, _ in grants if ns is not None} == {JOBS_NAMESPACE}
