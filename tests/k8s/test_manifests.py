"""configs/k8s/: schema-valid (strictly, by kubernetes-validate, and by the official client's models),
accepted by ``kubectl apply -k --dry-run=client``, and granting the agent exactly the API calls the backend
and its credential store make (checked against what the stub API server saw while the scenarios ran)."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes import client

from federation.cli import build_parser
from member_agent.backends.k8s_config import KubernetesSettings
from member_agent.config import AgentConfig
from tests.k8s.conftest import StubCluster
from tests.k8s.scenarios import SCENARIOS, collect, gang, name_of, new_job_id
from tests.k8s.stub_api import Request, StubApiServer

MANIFESTS = Path(__file__).resolve().parents[2] / "configs" / "k8s"
AGENT = ("fedq-system", "fedq-agent")  # the ServiceAccount the agent runs as
JOBS_NAMESPACE = "fedq-jobs"
SYSTEM_NAMESPACE = "fedq-system"
CREDENTIAL_SECRET = "fedq-agent-credential"
KUBERNETES_VERSIONS = ("1.29", "1.32", kubernetes_validate.latest_version())
"""Validated against: an old release still in use, kubectl's here, and the newest kubernetes-validate knows."""
_NAMESPACED = re.compile(r"^/api/v1/namespaces/([^/]+)/(pods|secrets)(?:/([^/]+)(/binding)?)?$")

Permission = tuple[str | None, str, str]  # (namespace or None for cluster-wide, resource, verb)


def kustomization() -> dict[str, Any]:
    return dict(yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text()))


def documents() -> list[dict[str, Any]]:
    """Every object the kustomization applies, in its order."""
    paths = [MANIFESTS / name for name in kustomization()["resources"]]
    assert sorted(paths) == sorted(MANIFESTS.glob("[0-9]*.yaml")), "kustomization.yaml lists every manifest"
    docs = [doc for path in paths for doc in yaml.safe_load_all(path.read_text())]
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
        + ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment"]
        + ["Role", "RoleBinding"] * 2
    )


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_manifests_pass_strict_schema_validation(version: str) -> None:
    """kubernetes-validate --strict: Kubernetes' own OpenAPI schemas, unknown fields refused."""
    for doc in documents():
        kubernetes_validate.validate(doc, version, strict=True)


def test_strict_validation_refuses_a_misspelt_field() -> None:
    """The check above can fail: a typo deep in the Deployment is refused by name."""
    (deployment,) = [d for d in documents() if d["kind"] == "Deployment"]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError, match="imagePullPolcy"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_agent_image_is_set_in_one_place() -> None:
    """The Deployment names the image ``fedq-agent``; the kustomization alone gives its registry and tag."""
    (image,) = kustomization()["images"]
    assert agent_container()["image"] == image["name"] == "fedq-agent"
    assert image["newTag"] == version("fedq"), "the tag the kustomization sets is the package's version"


def test_the_configmap_holds_a_valid_in_cluster_agent_config() -> None:
    (config_map,) = [d for d in documents() if d["kind"] == "ConfigMap"]
    config = AgentConfig.model_validate(yaml.safe_load(config_map["data"]["agent.yaml"]))
    assert (config.backend, config.credential_secret) == ("kubernetes", f"{SYSTEM_NAMESPACE}/{CREDENTIAL_SECRET}")
    settings = KubernetesSettings.model_validate(config.kubernetes)
    assert (settings.namespace, settings.in_cluster) == (JOBS_NAMESPACE, True)
    (pod,) = [d["spec"]["template"]["spec"] for d in documents() if d["kind"] == "Deployment"]
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"] == {"secretName": CREDENTIAL_SECRET, "optional": True, "defaultMode": 0o440}


def test_the_example_agent_config_is_valid() -> None:
    """configs/agents/kubernetes.yaml, the example the README names, as the agent reads it."""
    config = AgentConfig.model_validate(yaml.safe_load((MANIFESTS.parent / "agents" / "kubernetes.yaml").read_text()))
    assert config.backend == "kubernetes"
    KubernetesSettings.model_validate(config.kubernetes)


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
    ref = {"name": "fedq-join", "key": "token", "optional": True}
    assert env["FEDQ_JOIN_TOKEN"]["valueFrom"]["secretKeyRef"] == ref


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_agent_joins_once_then_runs_with_its_credential(tmp_path: Path) -> None:
    """Run the container's script with a stand-in ``fedq`` that records its arguments (and, on join, makes
    the credential appear where the Secret is mounted, as the kubelet does once the join has written it):
    the first start joins, a restart or a rescheduled pod runs."""
    container = agent_container()
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    env_values = {e["name"]: e.get("value") for e in container["env"]}
    assert env_values["FEDQ_CREDENTIAL_MOUNT"] == f"{mounted['credential']}/credential.json"
    fake = tmp_path / "bin" / "fedq"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$*" >> "$CALLS"\n[ "$2" = join ] && echo "{}" > "$FEDQ_CREDENTIAL_MOUNT"\nexit 0\n'
    )
    fake.chmod(0o755)
    env = {
        "PATH": f"{fake.parent}:/usr/bin:/bin",
        "CALLS": str(tmp_path / "calls"),
        "FEDQ_CREDENTIAL_MOUNT": str(tmp_path / "credential.json"),
        "FEDQ_JOIN_TOKEN": "tok-123",
    }
    for _ in range(2):
        subprocess.run([*container["command"], *container["args"]], env=env, check=True, timeout=30)
    joined, ran = (tmp_path / "calls").read_text().splitlines()
    config = f"{mounted['config']}/agent.yaml"
    assert joined == f"agent join --config {config} --token tok-123"
    assert ran == f"agent run --config {config}"
    for line in (joined, ran):  # what the real CLI accepts: the server and the rest come from the config
        build_parser().parse_args(line.split())


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_apply_dry_run(stub: StubApiServer) -> None:
    """kubectl maps every kind through the stub's discovery documents and would create each object.

    --validate=false: kubectl's client-side schema check downloads the server's OpenAPI document, which only
    a real API server serves; test_manifests_are_schema_valid does that check offline."""
    result = subprocess.run(
        ["kubectl", "--server", stub.url, "apply", "--dry-run=client", "--validate=false", "-k", f"{MANIFESTS}/"],
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
            if "resourceNames" in rule:
                assert (scope, rule["resourceNames"]) == (SYSTEM_NAMESPACE, [CREDENTIAL_SECRET])
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
    namespace, resource, name, binding = match.groups()
    if resource == "secrets":
        assert name in (None, CREDENTIAL_SECRET), f"the agent touched Secret {name}"
    verb = {"POST": "create", "DELETE": "delete", "GET": "get", "PUT": "update"}[request.method]
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
    assert {ns for ns, _, _ in needed if ns is not None} == {JOBS_NAMESPACE, SYSTEM_NAMESPACE}
    assert {ns for ns, _, _ in grants if ns is not None} == {JOBS_NAMESPACE, SYSTEM_NAMESPACE}
    assert {(res, verb) for ns, res, verb in needed if ns == SYSTEM_NAMESPACE} == {
        ("secrets", "get"),
        ("secrets", "create"),
        ("secrets", "update"),
    }
