"""Legacy discovery documents for the kinds in configs/k8s/, so kubectl can map them against the stub.

``kubectl apply --dry-run=client`` still asks the server which resources exist (the REST mapping)
before it prints what it would create; these documents answer that, and nothing else.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resource(name: str, singular: str, kind: str, namespaced: bool) -> dict[str, Any]:
    return {"name": name, "singularName": singular, "kind": kind, "namespaced": namespaced, "verbs": _VERBS}


def _group(name: str) -> dict[str, Any]:
    version = {"groupVersion": f"{name}/v1", "version": "v1"}
    return {"name": name, "versions": [version], "preferredVersion": version}


def _resource_list(group_version: str, *resources: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list(resources)}


DOCUMENTS: dict[str, dict[str, Any]] = {
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    },
    "/api/v1": _resource_list(
        "v1",
        _resource("namespaces", "namespace", "Namespace", False),
        _resource("nodes", "node", "Node", False),
        _resource("pods", "pod", "Pod", True),
        _resource("pods/binding", "", "Binding", True),
        _resource("secrets", "secret", "Secret", True),
        _resource("serviceaccounts", "serviceaccount", "ServiceAccount", True),
        _resource("configmaps", "configmap", "ConfigMap", True),
    ),
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group("apps"), _group("rbac.authorization.k8s.io")],
    },
    "/apis/apps/v1": _resource_list("apps/v1", _resource("deployments", "deployment", "Deployment", True)),
    "/apis/rbac.authorization.k8s.io/v1": _resource_list(
        "rbac.authorization.k8s.io/v1",
        _resource("clusterroles", "clusterrole", "ClusterRole", False),
        _resource("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False),
        _resource("roles", "role", "Role", True),
        _resource("rolebindings", "rolebinding", "RoleBinding", True),
    ),
}

_MODELS: dict[str, Any] = {"APIVersions": client.V1APIVersions, "APIGroupList": client.V1APIGroupList}


def _check(documents: dict[str, dict[str, Any]]) -> None:
    """Parse each document with the official client's models, as kubectl's view of them must hold."""
    for document in documents.values():
        _MODELS.get(document["kind"], client.V1APIResourceList).from_dict(document)


_check(DOCUMENTS)
