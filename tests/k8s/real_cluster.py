"""The scenarios' driver for a real cluster (tests/k8s/test_real_cluster.py); smoke-tested on the stub."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from member_agent.backends.kubernetes import KubernetesBackend
from member_agent.k8s_credentials import SecretCredentials
from tests.k8s.scenarios import SLEEP_FOREVER, wait_for

IMAGE = os.environ.get("FEDQ_K8S_TEST_IMAGE", "busybox:1.36")
NO_SCHEDULE = ("NoSchedule", "NoExecute")


class RealCluster:
    """The scenarios' driver for a real cluster: the kubelet does the work, the driver only watches."""

    timeout = float(os.environ.get("FEDQ_K8S_TEST_TIMEOUT", "180"))
    image = IMAGE

    def __init__(self, api: client.ApiClient, namespace: str, new_client: Callable[[], client.ApiClient]) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.backends: list[KubernetesBackend] = []
        self._new_client = new_client
        self.clients: list[client.ApiClient] = []

    def credentials(self, name: str) -> SecretCredentials:
        """In the test's namespace (deleted after it), through a client of its own."""
        self.clients.append(self._new_client())
        return SecretCredentials(self.clients[-1], self.namespace, name)

    def make_backend(self, **settings: Any) -> KubernetesBackend:
        backend = KubernetesBackend(self.api, namespace=self.namespace, **{"default_image": IMAGE, **settings})
        self.backends.append(backend)
        return backend

    def pick_nodes(self, backend: KubernetesBackend, count: int) -> list[str]:
        usable = [
            v for v in backend.nodes() if not v.unschedulable and not any(t.endswith(NO_SCHEDULE) for t in v.taints)
        ]
        assert usable, "the cluster has no schedulable node without NoSchedule/NoExecute taints"
        usable.sort(key=lambda v: -v.free().get("cpu", 0.0))
        return [usable[i % len(usable)].name for i in range(count)]

    def run(self, pod: str) -> None:
        """The kubelet starts it."""

    def exit(self, pod: str, code: int) -> None:
        """The pod's command exits with the code by itself."""

    def terminate(self, pod: str) -> None:
        """The kubelet finishes the graceful deletion."""

    def overrun(self, pod: str) -> None:
        """The kubelet enforces activeDeadlineSeconds."""

    def _pod(self, name: str, **spec: Any) -> client.V1Pod:
        return client.V1Pod(
            metadata=client.V1ObjectMeta(name=name, namespace=self.namespace),
            spec=client.V1PodSpec(
                containers=[
                    client.V1Container(
                        name="main",
                        image=IMAGE,
                        command=list(SLEEP_FOREVER),
                        resources=client.V1ResourceRequirements(requests=spec.pop("requests", None)),
                    )
                ],
                termination_grace_period_seconds=1,
                **spec,
            ),
        )

    def occupy(self, node: str, name: str, requests: dict[str, str]) -> None:
        self.core.create_namespaced_pod(self.namespace, self._pod(name, node_name=node, requests=requests))

    def precreate(self, name: str) -> None:
        self.core.create_namespaced_pod(self.namespace, self._pod(name, scheduler_name="fedq"))

    def pod(self, name: str) -> dict[str, Any] | None:
        try:
            pod = self.core.read_namespaced_pod(name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        found: dict[str, Any] = self.api.sanitize_for_serialization(pod)
        return found

    def settle(self, backend: KubernetesBackend) -> None:
        """A marker pod, then wait until the backend counts on its node what the server counts there."""
        (node,) = self.pick_nodes(backend, 1)
        self.occupy(node, f"marker-{uuid.uuid4().hex[:6]}", {"cpu": "1m"})

        def server_count() -> float:
            pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
            return float(sum(1 for p in pods if p.status is None or p.status.phase not in ("Succeeded", "Failed")))

        def agrees() -> bool:
            view = next(v for v in backend.nodes() if v.name == node)
            return view.used.get("pods", 0.0) == server_count()

        wait_for(agrees, self.timeout, f"the backend's pod count on {node} to match the server's")
