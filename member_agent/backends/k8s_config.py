"""Settings of the Kubernetes backend and how it reaches the API server.

One pydantic model holds every setting and its default, so the constructor, ``from_config`` (YAML,
camelCase keys) and the CLI cannot disagree, and a bad value is refused with the field's name.
"""

from __future__ import annotations

import os
from typing import Annotated

from kubernetes import client, config
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from federation.models.image import check_image
from federation.models.resources import GPU

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
KUBECONFIG_ENV = "KUBECONFIG"
FALLBACK_IMAGE = "busybox:1.36"
"""The last fallback, for a task without an image on a cluster without ``defaultImage``: a shell and coreutils."""


class KubernetesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    namespace: str = Field(default="fedq-jobs", min_length=1, max_length=63)
    kubeconfig: str | None = None  # path; None: in-cluster when running in a pod, else $KUBECONFIG or ~/.kube/config
    context: str | None = None
    in_cluster: bool = False
    scheduler_name: str = "fedq"
    default_image: Annotated[str, AfterValidator(check_image)] = FALLBACK_IMAGE
    """The image of a task whose spec names none (``tasks[].image``)."""
    gpu_resource: str = GPU  # what fedq's nvidia.com/gpu is called on this cluster's nodes (e.g. amd.com/gpu)
    kill_grace_seconds: int = Field(default=30, ge=0)
    keep_finished_seconds: float | None = Field(default=600.0, ge=0)  # None keeps finished pods for ever
    watch_timeout_seconds: int = Field(default=300, gt=0)
    request_timeout_seconds: float = Field(default=30.0, gt=0)
    list_page_size: int = Field(default=500, gt=0)


def load_api_client(settings: KubernetesSettings) -> client.ApiClient:
    """An ApiClient of its own (the client's global default configuration is left untouched)."""
    configuration = client.Configuration()
    if settings.in_cluster and settings.kubeconfig:
        raise ValueError("kubeconfig and inCluster are exclusive: pass one of them")
    if settings.in_cluster or (settings.kubeconfig is None and os.environ.get(SERVICE_HOST_ENV)):
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(
            config_file=settings.kubeconfig or os.environ.get(KUBECONFIG_ENV),  # read now, not at import
            context=settings.context,
            client_configuration=configuration,
            persist_config=False,
        )
    return client.ApiClient(configuration)
