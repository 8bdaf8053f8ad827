"""How a fedq task becomes a Pod, and how a Pod's state reads back as a task status.

Pure functions over the official client's models, so the mapping is testable without an API server.
Labels are for people and selectors (``kubectl get pods -l fedq.io/job=...``); the exact job id, task
name, index and epoch travel in annotations, which have no length or character limits.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from kubernetes import client

from member_agent.backends.base import TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.k8s_config import FALLBACK_IMAGE
from policies.units import parse_quantity

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fedq"
JOB_LABEL = "fedq.io/job"
EPOCH_LABEL = "fedq.io/epoch"
JOB_ID_ANNOTATION = "fedq.io/job-id"
TASK_NAME_ANNOTATION = "fedq.io/task-name"
TASK_INDEX_ANNOTATION = "fedq.io/task-index"
EPOCH_ANNOTATION = "fedq.io/epoch"
CONTAINER_NAME = "task"
WALLTIME_REASON = "walltime"
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})

_NOT_DNS = re.compile(r"[^a-z0-9-]+")
_NOT_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_SLUG_LIMIT = 52  # + "-" + 10 hex digits = 63, a valid DNS label and hostname


@dataclass(frozen=True)
class PodTemplate:
    """What every task pod of this agent shares: namespace, scheduler, default image, grace, resource names."""

    namespace: str
    scheduler_name: str = "fedq"
    default_image: str = FALLBACK_IMAGE  # for a task whose spec names no image
    kill_grace_seconds: int = 30
    resource_names: Mapping[str, str] = field(default_factory=dict)  # fedq name -> this cluster's, where they differ


def pod_name(job_id: str, task_name: str, index: int, epoch: int) -> str:
    """A readable DNS-label name; the hash of the exact tuple keeps distinct tasks apart after slugging."""
    slug = _NOT_DNS.sub("-", f"{job_id}-{task_name}-{index}-e{epoch}".lower()).strip("-")
    digest = hashlib.sha256(json.dumps([job_id, task_name, index, epoch]).encode()).hexdigest()[:10]
    return f"{slug[:_NAME_SLUG_LIMIT].rstrip('-') or 'fedq'}-{digest}"


def label_value(text: str) -> str:
    """``text`` if it is a valid label value, else a valid slug of it with a hash suffix."""
    if len(text) <= 63 and _LABEL_VALUE.match(text):
        return text
    slug = _NOT_LABEL.sub("-", text).strip("-_.")[:52].rstrip("-_.")
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{slug}-{digest}" if slug else digest


def format_quantity(value: float) -> str:
    """Base units back to a Kubernetes quantity: whole numbers as-is, fractions in milli-units."""
    if value < 0:
        raise ValueError(f"resource quantity must not be negative, got {value}")
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def metadata(obj: Any) -> client.V1ObjectMeta:
    """An object's metadata; the server always sends it, so its absence is a protocol error."""
    meta = obj.metadata
    if meta is None:
        raise ValueError(f"{type(obj).__name__} without metadata")
    return cast(client.V1ObjectMeta, meta)


def name_of(obj: Any) -> str:
    return metadata(obj).name or ""


def build_pod(launch: TaskLaunch, template: PodTemplate) -> client.V1Pod:
    """The Pod for one task: unscheduled (the agent binds it), never restarted, requests == limits."""
    quantities = {
        template.resource_names.get(res, res): format_quantity(amount) for res, amount in launch.resources.items()
    }
    env = {
        "FEDQ_JOB_ID": launch.job_id,
        "FEDQ_TASK_NAME": launch.task_name,
        "FEDQ_TASK_INDEX": str(launch.index),
        "FEDQ_EPOCH": str(launch.epoch),
        **launch.env,
    }
    container = client.V1Container(
        name=CONTAINER_NAME,
        image=launch.image or template.default_image,
        image_pull_policy=launch.image_pull_policy,
        working_dir=launch.working_dir,
        command=list(launch.command) or None,
        env=[client.V1EnvVar(name=k, value=v) for k, v in env.items()],
        resources=client.V1ResourceRequirements(requests=quantities, limits=dict(quantities)),
        termination_message_policy="FallbackToLogsOnError",
    )
    deadline = math.ceil(launch.walltime) if launch.walltime else None
    return client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=client.V1ObjectMeta(
            name=pod_name(launch.job_id, launch.task_name, launch.index, launch.epoch),
            namespace=template.namespace,
            labels={
                MANAGED_BY_LABEL: MANAGED_BY,
                JOB_LABEL: label_value(launch.job_id),
                EPOCH_LABEL: str(launch.epoch),
            },
            annotations={
                JOB_ID_ANNOTATION: launch.job_id,
                TASK_NAME_ANNOTATION: launch.task_name,
                TASK_INDEX_ANNOTATION: str(launch.index),
                EPOCH_ANNOTATION: str(launch.epoch),
            },
        ),
        spec=client.V1PodSpec(
            scheduler_name=template.scheduler_name,
            restart_policy="Never",
            active_deadline_seconds=max(deadline, 1) if deadline else None,
            termination_grace_period_seconds=template.kill_grace_seconds,
            automount_service_account_token=False,
            containers=[container],
        ),
    )


def _container_requests(container: client.V1Container) -> dict[str, float]:
    """Requests, falling back to limits per resource, as the API server defaults them."""
    resources = container.resources
    if resources is None:
        return {}
    limits = resources.limits or {}
    requests = resources.requests or {}
    return {res: parse_quantity(requests.get(res) or limits[res]) for res in {*limits, *requests}}


def _add(total: dict[str, float], extra: Mapping[str, float]) -> dict[str, float]:
    return {res: total.get(res, 0.0) + extra.get(res, 0.0) for res in {*total, *extra}}


def _max(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {res: max(a.get(res, 0.0), b.get(res, 0.0)) for res in {*a, *b}}


def pod_requests(spec: client.V1PodSpec | None) -> dict[str, float]:
    """What a pod takes from its node, computed as kube-scheduler does.

    Containers add up; sidecars (init containers with restartPolicy Always) run alongside them; a plain
    init container runs alone with the sidecars started before it, so only the peak counts; overhead adds.
    """
    if spec is None:
        return {}
    running: dict[str, float] = {}
    for container in spec.containers or ():
        running = _add(running, _container_requests(container))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for init in spec.init_containers or ():
        needs = _container_requests(init)
        if init.restart_policy == "Always":
            sidecars = _add(sidecars, needs)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(sidecars, needs))
    total = _max(_add(running, sidecars), init_peak)
    overhead = {res: parse_quantity(q) for res, q in (spec.overhead or {}).items()}
    return _add(total, overhead)


def is_managed(pod: client.V1Pod) -> bool:
    return (metadata(pod).labels or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def _timestamp(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _task_container(pod: client.V1Pod) -> client.V1ContainerStatus | None:
    statuses: Iterable[client.V1ContainerStatus] = (pod.status.container_statuses or ()) if pod.status else ()
    return next((s for s in statuses if s.name == CONTAINER_NAME), None)


def task_report(pod: client.V1Pod) -> TaskReport | None:
    """The task state a fedq pod shows, or None for a pod that is not (or not validly) a fedq task."""
    annotations = metadata(pod).annotations or {}
    if not is_managed(pod):
        return None
    try:
        job_id = annotations[JOB_ID_ANNOTATION]
        task_name = annotations[TASK_NAME_ANNOTATION]
        index = int(annotations[TASK_INDEX_ANNOTATION])
        epoch = int(annotations[EPOCH_ANNOTATION])
    except (KeyError, ValueError):
        return None
    status = pod.status or client.V1PodStatus()
    container = _task_container(pod)
    state = container.state if container is not None else None
    running = state.running if state is not None else None
    terminated = state.terminated if state is not None else None
    waiting = state.waiting if state is not None else None
    phase, reason, exit_code = TaskPhase.PENDING, "", None
    log_tail = ""
    if status.phase == "Succeeded":
        phase, exit_code = TaskPhase.SUCCEEDED, terminated.exit_code if terminated else 0
    elif status.phase == "Failed":
        exit_code = terminated.exit_code if terminated else None
        if status.reason == "DeadlineExceeded":
            phase, reason = TaskPhase.KILLED, WALLTIME_REASON
        else:
            phase = TaskPhase.FAILED
            reason = status.reason or (terminated.reason if terminated else "") or "Failed"
        log_tail = (terminated.message if terminated else None) or status.message or ""
    elif status.phase in ("Running", "Unknown"):
        phase = TaskPhase.RUNNING
    elif waiting is not None:
        reason = waiting.reason or ""
    started = running.started_at if running else (terminated.started_at if terminated else None)
    return TaskReport(
        job_id=job_id,
        task_name=task_name,
        index=index,
        epoch=epoch,
        phase=phase,
        node=(pod.spec.node_name or "") if pod.spec else "",
        exit_code=exit_code,
        reason=reason,
        log_tail=log_tail,
        started_at=_timestamp(started),
        finished_at=_timestamp(terminated.finished_at if terminated else None),
    )
