"""Job fields only some backends honour, and the one rule that keeps a job off clusters that cannot.

A backend declares the fields it honours (``member_agent.backends``: ``register_backend(honours=...)``)
and its agent says so in every report (``ClusterReport.honours``). The scheduler sees them as labels of
the cluster (``honours.fedq.io/<field>: "true"``), and a job that uses a field carries the same label in
the selector it is scheduled by (``job_view.job_info``), so the one selector rule (``FederationState.
matching``, the predicates plugin, ``never_fits``) never sends a job where a field would be ignored or
misread: a task image to Ray, a Ray ``runtimeEnv`` to Kubernetes. Admission refuses at submit a job no
joined cluster could honour, naming the field (``federation.api.admission``); an agent that gets one all
the same (it reported other fields since) fails it at once rather than run it wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # federation.models imports this module (join labels): no cycle at run time
    from federation.models.job import JobSpecBody

FIELDS = ("image", "imagePullPolicy", "workingDir", "runtimeEnv")
"""The job fields a backend must declare to be sent jobs that use them."""
LABEL_PREFIX = "honours.fedq.io/"
"""Cluster labels under this prefix are the federation's own: a join may not set them."""
_TASK_FIELDS = (("image", "image"), ("imagePullPolicy", "image_pull_policy"), ("workingDir", "working_dir"))


def used(spec: JobSpecBody) -> dict[str, str]:
    """The fields of ``FIELDS`` the job uses, each with the path of its first use (for messages)."""
    found: dict[str, str] = {}
    for index, task in enumerate(spec.tasks):
        for name, attribute in _TASK_FIELDS:
            if getattr(task, attribute) is not None:
                found.setdefault(name, f"spec.tasks[{index}].{name}")
    if spec.runtime_env is not None:
        found["runtimeEnv"] = "spec.runtimeEnv"
    return found


def labels(honours: Iterable[str]) -> dict[str, str]:
    """The labels that say a cluster's backend honours ``honours``."""
    return {LABEL_PREFIX + name: "true" for name in honours if name in FIELDS}


def cluster_labels(own: dict[str, str], honours: Iterable[str]) -> dict[str, str]:
    """What a job's selector is matched against: the cluster's own labels and what it honours."""
    return {**own, **labels(honours)}


def selector(spec: JobSpecBody) -> dict[str, str]:
    """The job's ``clusterSelector`` with the labels of the fields it uses (the same dict when none)."""
    needed = used(spec)
    if not needed:
        return spec.cluster_selector
    return {**spec.cluster_selector, **labels(needed)}


def unhonoured(spec: JobSpecBody, honours: Iterable[str]) -> dict[str, str]:
    """The fields the job uses that ``honours`` lacks, with their paths."""
    have = set(honours)
    return {name: path for name, path in used(spec).items() if name not in have}


def refuses_labels(cluster_labels: dict[str, str]) -> str | None:
    """Why a cluster may not join with ``cluster_labels``, if it may not."""
    taken = sorted(key for key in cluster_labels if key.startswith(LABEL_PREFIX))
    if not taken:
        return None
    return f"labels {', '.join(taken)} are fedq's own (from what the agent reports its backend honours): remove them"
