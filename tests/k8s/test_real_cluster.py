"""The acceptance scenarios against a real Kubernetes cluster, when ``KUBECONFIG`` names one.

Skipped otherwise (the development machine and CI have no cluster): docs/kubernetes.md says which
behaviour was verified only against the stub. Needs a user that may create and delete namespaces and
pods, bind pods and list nodes (cluster-admin on a kind/minikube cluster is fine), nodes that can pull
``FEDQ_K8S_TEST_IMAGE`` (default busybox:1.36), and a cluster that lets root busybox pods run in a new
namespace (no "restricted" Pod Security default). Each test gets a namespace of its own, deleted after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client, config

from member_agent.backends.k8s_pods import name_of
from tests.k8s.real_cluster import RealCluster
from tests.k8s.scenarios import SCENARIOS, Cluster, wait_for

pytestmark = pytest.mark.skipif(
    not os.environ.get("KUBECONFIG"),
    reason="KUBECONFIG is not set: these scenarios need a real cluster; they ran only against the stub",
)


@pytest.fixture(scope="module")
def admin_api() -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    yield api
    api.close()


@pytest.fixture
def real_cluster(admin_api: client.ApiClient) -> Iterator[RealCluster]:
    core = client.CoreV1Api(admin_api)
    namespace = f"fedq-test-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    cluster = RealCluster(admin_api, namespace, lambda: config.new_client_from_config(os.environ["KUBECONFIG"]))
    try:
        wait_for(
            lambda: any(name_of(sa) == "default" for sa in core.list_namespaced_service_account(namespace).items),
            60,
            "the namespace's default ServiceAccount",
        )
        yield cluster
    finally:
        for backend in cluster.backends:
            backend.close()
        for api in cluster.clients:
            api.close()
        core.delete_namespace(namespace)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_scenario_on_real_cluster(scenario: Callable[[Cluster], None], real_cluster: RealCluster) -> None:
    scenario(real_cluster)
