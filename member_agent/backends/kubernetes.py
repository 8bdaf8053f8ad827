"""The Kubernetes backend: the member agent acts as the cluster's batch scheduler, as Volcano does.

It watches nodes and every pod (whoever started them: capacity is what is left), creates a job's tasks
as Pods with ``schedulerName: fedq`` that no other scheduler touches, and binds them to the nodes the
agent's session chose through ``pods/binding``. A gang is all or nothing: every pod is created first and
bound only once all exist; if any step fails, the pods made so far are deleted and ``LaunchError`` is
raised. Walltime is the pod's ``activeDeadlineSeconds``; the kubelet's ``DeadlineExceeded`` reads back as
KILLED with reason "walltime".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import structlog
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from federation.models.resources import GPU
from member_agent.backends.base import LaunchError, LogLines, NodeView, TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.k8s_cache import ClusterCache, Launched
from member_agent.backends.k8s_config import KubernetesSettings, load_api_client
from member_agent.backends.k8s_informer import Informer, Sink
from member_agent.backends.k8s_logs import PodLogs
from member_agent.backends.k8s_pods import PodTemplate, build_pod, metadata, name_of, pod_name, pod_requests
from policies.clock import Clock, SystemClock

log = structlog.get_logger(__name__)

API_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)
ROLLBACK_GRACE_SECONDS = 1  # a rolled-back pod was never reported: stop it fast, but let the kubelet confirm
_GONE_ALREADY = (404, 409)  # 409: the uid precondition failed, so the pod we meant no longer exists


class KubernetesBackendError(RuntimeError):
    """An API call failed in a way the agent should retry later (the backend's view stays consistent)."""


def describe(exc: BaseException) -> str:
    """A one-line account of an API failure, with the server's own message when it sent one."""
    if isinstance(exc, ApiException):
        try:
            message = json.loads(exc.body or "{}").get("message", "")
        except (ValueError, AttributeError):
            message = ""
        return f"HTTP {exc.status} {exc.reason}" + (f": {message}" if message else "")
    return f"{type(exc).__name__}: {exc}"


class KubernetesBackend:
    """See the module docstring. Settings are the fields of ``KubernetesSettings`` (snake_case here).

    ``api_client``: an ApiClient to use (the caller closes it); without one the backend builds its own
    from ``kubeconfig``/``context``, or in-cluster config with ``in_cluster=True`` or when it runs in a pod.
    The constructor lists nodes and pods before returning, so ``nodes()`` and ``tasks()`` are complete.
    """

    name = "kubernetes"

    def __init__(self, api_client: client.ApiClient | None = None, *, clock: Clock | None = None, **settings: Any):
        self.settings = KubernetesSettings(**settings)
        self._clock: Clock = clock or SystemClock()
        self._owns_client = api_client is None
        self._api_client = api_client or load_api_client(self.settings)
        self._core = client.CoreV1Api(self._api_client)
        namespace = self.settings.namespace
        renamed = {GPU: self.settings.gpu_resource} if self.settings.gpu_resource != GPU else {}
        self._fedq_names = {here: name for name, here in renamed.items()}
        self._template = PodTemplate(
            namespace=namespace,
            scheduler_name=self.settings.scheduler_name,
            default_image=self.settings.default_image,
            kill_grace_seconds=self.settings.kill_grace_seconds,
            resource_names=renamed,
        )
        self._cache = ClusterCache(namespace, self._clock)
        self._pod_logs = PodLogs(self._core, namespace, self.settings.request_timeout_seconds)
        self._informers = [
            self._informer("nodes", self._core.list_node, client.V1Node, self._cache.node_sink),
            self._informer("pods", self._core.list_pod_for_all_namespaces, client.V1Pod, self._cache.pod_sink),
        ]
        self._closed = False
        try:
            for informer in self._informers:
                informer.start()
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_config(
        cls, values: Mapping[str, Any], *, api_client: client.ApiClient | None = None, clock: Clock | None = None
    ) -> KubernetesBackend:
        """From an agent config section (camelCase keys, as in the YAML files); unknown keys are refused."""
        settings = KubernetesSettings.model_validate(dict(values))
        return cls(api_client, clock=clock, **settings.model_dump())

    def _informer(self, kind: str, list_fn: Any, model: Any, sink: Sink) -> Informer:
        return Informer(
            kind,
            list_fn,
            model,
            sink,
            page_size=self.settings.list_page_size,
            watch_timeout_seconds=self.settings.watch_timeout_seconds,
            request_timeout_seconds=self.settings.request_timeout_seconds,
        )

    # -- Backend protocol -----------------------------------------------------------------------

    def nodes(self) -> list[NodeView]:
        """Capacity in fedq's resource names (a cluster's own GPU resource reads as nvidia.com/gpu)."""
        views = self._cache.nodes()
        if not self._fedq_names:
            return views
        return [
            replace(v, allocatable=self._in_fedq_names(v.allocatable), used=self._in_fedq_names(v.used)) for v in views
        ]

    def _in_fedq_names(self, resources: dict[str, float]) -> dict[str, float]:
        return {self._fedq_names.get(name, name): amount for name, amount in resources.items()}

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        if not gang:
            return
        pods = [build_pod(task, self._template) for task in gang]
        names = [name_of(pod) for pod in pods]
        if len(set(names)) != len(names):
            raise LaunchError(f"gang of job {gang[0].job_id} names the same task twice")
        if unplaced := [task.task_id for task in gang if not task.node]:
            raise LaunchError(f"tasks without a node cannot be bound: {', '.join(unplaced)}")
        self._cache.begin_launch(names)
        created: list[client.V1Pod] = []
        creating: str | None = None
        try:
            for pod in pods:
                creating = name_of(pod)
                created.append(self._create(pod))
            creating = None
            for task, pod in zip(gang, created, strict=True):
                self._bind(name_of(pod), task.node)
        except API_ERRORS as exc:
            # A refused create made nothing; a create cut off in transit may have made its pod.
            unsure = [creating] if creating and not isinstance(exc, ApiException) else []
            self._roll_back(names, created, unsure)
            raise LaunchError(
                f"gang of {len(gang)} task(s) of job {gang[0].job_id} not started, its pods deleted: {describe(exc)}"
            ) from exc
        self._cache.launched(
            [
                Launched(
                    name=name_of(pod),
                    uid=metadata(pod).uid or "",
                    node=task.node,
                    requests=pod_requests(pod.spec),
                    status=TaskReport(
                        task.job_id, task.task_name, task.index, task.epoch, TaskPhase.PENDING, node=task.node
                    ),
                )
                for task, pod in zip(gang, created, strict=True)
            ]
        )
        for task, pod in zip(gang, created, strict=True):
            self._pod_logs.follow(name_of(pod), task)
        log.info("gang bound", job_id=gang[0].job_id, epoch=gang[0].epoch, pods=names)

    def kill(
        self, job_id: str, epoch: int | None = None, reason: str = "cancelled", tasks: Collection[str] | None = None
    ) -> None:
        failures = []
        for name, uid in self._cache.kill_targets(job_id, epoch, reason, tasks):
            try:
                self._delete(name, uid, self.settings.kill_grace_seconds)
            except API_ERRORS as exc:
                failures.append(f"{name}: {describe(exc)}")
        if failures:
            raise KubernetesBackendError(f"could not delete pods of job {job_id}: {'; '.join(failures)}")
        log.info("job killed", job_id=job_id, epoch=epoch, reason=reason)

    def poll(self) -> list[TaskReport]:
        changes = self._cache.drain()
        self._collect_garbage()
        return changes

    def tasks(self) -> list[TaskReport]:
        return self._cache.tasks()

    def logs(self) -> list[LogLines]:
        """The pod log API's new lines of the runs launched with a log limit (``k8s_logs``)."""
        statuses = {pod_name(t.job_id, t.task_name, t.index, t.epoch): t for t in self._cache.tasks()}
        return self._pod_logs.read(statuses)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for informer in self._informers:
            informer.stop()
        if self._owns_client:
            self._api_client.close()

    # -- beyond the protocol ----------------------------------------------------------------------

    def wait_for_changes(self, timeout: float) -> bool:
        """Block until ``poll()`` has something to return (True) or ``timeout`` seconds pass (False)."""
        return self._cache.wait_until(self._cache.has_changes, timeout)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` holds, re-checked at every change the watches bring; False on timeout."""
        return self._cache.wait_until(predicate, timeout)

    # -- API calls ----------------------------------------------------------------------------------

    def _create(self, pod: client.V1Pod) -> client.V1Pod:
        return self._core.create_namespaced_pod(
            self.settings.namespace, pod, _request_timeout=self.settings.request_timeout_seconds
        )

    def _bind(self, pod_name: str, node: str) -> None:
        body = client.V1Binding(
            api_version="v1",
            kind="Binding",
            metadata=client.V1ObjectMeta(name=pod_name, namespace=self.settings.namespace),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        # The API server answers a binding with a Status, not the Binding the client's schema promises,
        # so the reply is not deserialized (non-2xx answers still raise ApiException).
        response: urllib3.HTTPResponse = self._core.create_namespaced_pod_binding(  # type: ignore[assignment]
            pod_name,
            self.settings.namespace,
            body,
            _preload_content=False,
            _request_timeout=self.settings.request_timeout_seconds,
        )
        response.drain_conn()
        response.release_conn()

    def _delete(self, name: str, uid: str, grace_seconds: int) -> None:
        """Delete one pod if it is still the one we mean (uid precondition); gone already is fine."""
        options = client.V1DeleteOptions(
            grace_period_seconds=grace_seconds,
            preconditions=client.V1Preconditions(uid=uid) if uid else None,
        )
        try:
            self._core.delete_namespaced_pod(
                name,
                self.settings.namespace,
                body=options,
                _request_timeout=self.settings.request_timeout_seconds,
            )
        except ApiException as exc:
            if exc.status not in _GONE_ALREADY:
                raise

    def _roll_back(self, names: list[str], created: list[client.V1Pod], unsure: list[str]) -> None:
        victims = [(name_of(pod), metadata(pod).uid or "") for pod in created] + [(n, "") for n in unsure]
        self._cache.rolled_back(names, [name for name, _ in victims])
        for name, uid in victims:
            try:
                self._delete(name, uid, ROLLBACK_GRACE_SECONDS)
            except API_ERRORS as exc:
                log.warning("rollback delete failed, retried on poll", pod=name, error=describe(exc))

    def _collect_garbage(self) -> None:
        """Delete finished pods past retention (their status was reported) and rollback leftovers."""
        for name, uid in self._cache.finished_garbage(self.settings.keep_finished_seconds):
            try:
                self._delete(name, uid, 0)
                self._cache.forget_final(name)
            except API_ERRORS as exc:
                log.warning("deleting finished pod failed, retried on poll", pod=name, error=describe(exc))
        for name, uid in self._cache.orphans():
            try:
                self._delete(name, uid, ROLLBACK_GRACE_SECONDS)
            except API_ERRORS as exc:
                log.warning("deleting rolled-back pod failed, retried on poll", pod=name, error=describe(exc))
