"""The cluster credential in a Kubernetes Secret, for an agent that runs in a pod.

An ``emptyDir`` dies with its pod, so a rescheduled agent would need a new (single-use) join token. A
Secret outlives the pod: ``fedq agent join --credential-secret NAMESPACE/NAME`` writes it (a re-join
replaces its content: the federation has revoked the old credential by then), ``fedq agent run`` reads
it through the API. The Deployment also mounts it (optional) so its start script can tell whether the
agent has joined before without calling the API (configs/k8s/20-agent.yaml).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from member_agent.backends.k8s_config import KubernetesSettings, load_api_client
from member_agent.backends.kubernetes import describe
from member_agent.credentials import Credential

KEY = "credential.json"
"""The Secret's data key, and so the file name where the Secret is mounted."""
LABELS = {"app.kubernetes.io/part-of": "fedq", "app.kubernetes.io/component": "agent-credential"}


def parse_secret_ref(text: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` as the pair, or a ValueError that shows the form."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"credentialSecret takes NAMESPACE/NAME, e.g. fedq-system/fedq-agent-credential, not {text!r}")
    return namespace, name


@dataclass
class SecretCredentials:
    api: client.ApiClient
    namespace: str
    name: str
    timeout: float = 30.0

    @property
    def where(self) -> str:
        return f"Secret {self.namespace}/{self.name}"

    def _core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def save(self, credential: Credential) -> None:
        """Replace the Secret's content, or create it on the first join."""
        body = client.V1Secret(
            api_version="v1",
            kind="Secret",
            metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace, labels=dict(LABELS)),
            type="Opaque",
            data={KEY: base64.b64encode(credential.to_json().encode()).decode()},
        )
        try:
            try:
                self._core().replace_namespaced_secret(self.name, self.namespace, body, _request_timeout=self.timeout)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                self._core().create_namespaced_secret(self.namespace, body, _request_timeout=self.timeout)
        except ApiException as exc:
            raise ValueError(f"could not write the credential to {self.where}: {describe(exc)}") from exc

    def load(self) -> Credential:
        try:
            secret = self._core().read_namespaced_secret(self.name, self.namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 404:
                raise ValueError(f"no credential in {self.where}: run `fedq agent join` first") from None
            raise ValueError(f"could not read the credential from {self.where}: {describe(exc)}") from exc
        encoded = (secret.data or {}).get(KEY)
        if encoded is None:
            raise ValueError(f"{self.where} has no {KEY!r} key: run `fedq agent join` again")
        return Credential.from_json(base64.b64decode(encoded).decode(), self.where)


@contextmanager
def secret_credentials(ref: str, kubernetes: Mapping[str, Any]) -> Iterator[SecretCredentials]:
    """The Secret ``NAMESPACE/NAME`` of the cluster the agent's ``kubernetes`` settings reach (in-cluster
    config in a pod), its API client closed on the way out."""
    namespace, name = parse_secret_ref(ref)
    api = load_api_client(KubernetesSettings.model_validate(dict(kubernetes)))
    try:
        yield SecretCredentials(api, namespace, name)
    finally:
        api.close()
