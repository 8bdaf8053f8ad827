"""A small in-memory Kubernetes API server for the backend's tests.

It serves only the calls the backend (and ``kubectl apply --dry-run=client``'s discovery) makes, with
the real server's shapes: lists with a resourceVersion and ``limit``/``continue`` paging, chunked watch
streams resuming after a resourceVersion (bookmarks on request, 410 Gone as an ERROR event once history
is compacted), pod create/delete (graceful for bound pods, uid preconditions), ``pods/binding`` answered
with a Status as the real server does, Secrets (get, create, replace: the agent's credential store), and
404/409/422 Status errors. Every object it stores or sends is
first parsed by the official client's models, which refuse unknown fields and wrong types, so a reply the
real client could not read fails the test that caused it. Tests drive the kubelet's part directly:
start a pod, end it with an exit code, run out its deadline, finish a graceful deletion.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubernetes import client

from tests.k8s import discovery

_MODELS: dict[str, Any] = {"nodes": client.V1Node, "pods": client.V1Pod, "secrets": client.V1Secret}
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?(/binding)?$")
_LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")
_STREAMS = {None: ("stdout", "stderr"), "All": ("stdout", "stderr"), "Stdout": ("stdout",), "Stderr": ("stderr",)}
_SECRET = re.compile(r"^/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?$")


def now_iso(offset_seconds: float = 0.0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=offset_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    client.V1Status.from_dict(body)
    return body


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.body = status(code, reason, message, **details)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class _Failure:
    method: str
    path: re.Pattern[str]
    code: int
    reason: str
    times: int
    watch: bool


@dataclass
class _Watch:
    """One open watch stream: where it is in the history and which forced endings it has already seen."""

    resource: str
    pos: int
    deadline: float
    bookmarks: bool
    expire_gen: int
    drop_gen: int
    bookmark_gen: int


@dataclass(frozen=True)
class _Event:
    rv: int
    resource: str
    type: str
    obj: dict[str, Any]


def _qos(pod: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in pod["spec"]["containers"]]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(res)
        and (r.get("requests") or {}).get(res, (r.get("limits") or {})[res]) == (r.get("limits") or {})[res]
        for r in resources
        for res in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


class StubApiServer:
    """Start with ``start()``, stop with ``stop()``; ``url`` is the base URL for an ApiClient."""

    def __init__(self, job_namespace: str = "fedq-jobs") -> None:
        self.job_namespace = job_namespace
        self.namespaces = {"default", "kube-system", "fedq-system", job_namespace}
        self.requests: list[Request] = []
        self.errors: list[str] = []  # server-side failures: the fixture asserts there are none
        self._cond = threading.Condition()
        self._rv = 1000
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {"nodes": {}, "pods": {}, "secrets": {}}
        self._log: list[_Event] = []
        self._compacted = 0
        self._held = False
        self._closing = False
        self._expire_gen = 0
        self._drop_gen = 0
        self._bookmark_gen = 0
        self._bookmarks_sent: dict[str, int] = {}
        self._failures: list[_Failure] = []
        self._pod_logs: dict[tuple[str, str], list[tuple[float, str, str]]] = {}  # (time, stream, text)
        self._snapshots: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._watches: list[tuple[str, str]] = []  # (resource, resourceVersion asked for), in order
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> StubApiServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.stub = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="k8s-stub", daemon=True
        )
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    # -- state changes (under the lock) -------------------------------------------------------------

    def _commit(self, resource: str, event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        _MODELS[resource].from_dict(obj)  # refuse to store what the client could not read
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if event_type == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
        self._log.append(_Event(self._rv, resource, event_type, copy.deepcopy(obj)))
        self._cond.notify_all()
        return copy.deepcopy(obj)

    def _pod(self, name: str, namespace: str | None) -> dict[str, Any]:
        pod = self._objects["pods"].get((namespace or self.job_namespace, name))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found', name=name, kind="pods")
        return pod

    # -- what tests do: the cluster around the agent ----------------------------------------------

    def add_node(
        self,
        name: str,
        cpu: str = "8",
        memory: str = "32Gi",
        *,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
        unschedulable: bool = False,
        extra: dict[str, str] | None = None,
    ) -> None:
        allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": now_iso(),
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {
                "capacity": dict(allocatable),
                "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        with self._cond:
            self._commit("nodes", "ADDED", node)

    def cordon(self, name: str) -> None:
        with self._cond:
            node = copy.deepcopy(self._objects["nodes"][("", name)])
            node["spec"]["unschedulable"] = True
            self._commit("nodes", "MODIFIED", node)

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        node: str | None = None,
        requests: dict[str, str] | None = None,
        phase: str = "Running",
        labels: dict[str, str] | None = None,
    ) -> None:
        """A pod someone else made (a system daemon, another scheduler's workload)."""
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "containers": [{"name": "main", "image": "example/app:1", "resources": {"requests": requests or {}}}],
                **({"nodeName": node} if node else {}),
            },
        }
        with self._cond:
            created = self._create_pod(namespace, pod)
            created["status"]["phase"] = phase
            self._commit("pods", "MODIFIED", created)

    def write_log(self, name: str, stream: str, lines: list[str], *, at: float | None = None) -> None:
        """The pod's container printed ``lines`` to ``stream`` (stdout, stderr), at ``at`` (default now)."""
        when = time.time() if at is None else at
        with self._cond:
            pod = self._pod(name, None)
            key = (pod["metadata"]["namespace"], name)
            self._pod_logs.setdefault(key, []).extend((when, stream, line) for line in lines)

    def _pod_log(self, namespace: str, name: str, query: dict[str, str]) -> bytes:
        """``GET .../pods/NAME/log``: ``container``, ``stream`` (All, Stdout, Stderr: the split-streams
        query of Kubernetes 1.32+), ``timestamps``, ``limitBytes``, as the kubelet answers them."""
        with self._cond:
            pod = self._pod(name, namespace)
            containers = [c["name"] for c in pod["spec"]["containers"]]
            if query.get("container", containers[0]) not in containers:
                raise ApiError(400, "BadRequest", f"container {query['container']} is not valid for pod {name}")
            if query.get("stream") not in _STREAMS:
                raise ApiError(422, "Invalid", f"stream: Unsupported value: {query['stream']!r}")
            wanted = _STREAMS[query.get("stream")]
            entries = [e for e in self._pod_logs.get((namespace, name), []) if e[1] in wanted]
        stamped = query.get("timestamps") == "true"
        text = "".join(
            (datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") + " " if stamped else "") + line + "\n"
            for when, _, line in entries
        ).encode()
        limit = query.get("limitBytes")
        return text[: int(limit)] if limit else text

    def start_pod(self, name: str, namespace: str | None = None) -> None:
        """The kubelet started the pod's containers."""
        with self._cond:
            pod = copy.deepcopy(self._pod(name, namespace))
            assert pod["spec"].get("nodeName"), f"pod {name} is not bound: a kubelet would never start it"
            pod["status"].update(
                phase="Running",
                startTime=now_iso(),
                containerStatuses=[
                    {
                        **self._container_base(c),
                        "ready": True,
                        "started": True,
                        "state": {"running": {"startedAt": now_iso()}},
                    }
                    for c in pod["spec"]["containers"]
                ],
            )
            self._commit("pods", "MODIFIED", pod)

    def finish_pod(
        self, name: str, exit_code: int, *, reason: str | None = None, message: str = "", namespace: str | None = None
    ) -> None:
        """The pod's containers exited with ``exit_code`` (restartPolicy Never: the pod ends)."""
        with self._cond:
            pod = copy.deepcopy(self._pod(name, namespace))
            self._terminate(pod, exit_code, reason or ("Completed" if exit_code == 0 else "Error"), message)
            pod["status"]["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            self._commit("pods", "MODIFIED", pod)

    def exceed_deadline(self, name: str, namespace: str | None = None) -> None:
        """The kubelet ended the pod at its activeDeadlineSeconds."""
        with self._cond:
            pod = copy.deepcopy(self._pod(name, namespace))
            assert pod["spec"].get("activeDeadlineSeconds"), f"pod {name} has no activeDeadlineSeconds"
            self._terminate(pod, 137, "Error", "")
            pod["status"].update(
                phase="Failed",
                reason="DeadlineExceeded",
                message="Pod was active on the node longer than the specified deadline",
            )
            self._commit("pods", "MODIFIED", pod)

    def finish_termination(self, name: str, exit_code: int = 143, namespace: str | None = None) -> None:
        """The kubelet stopped a pod being deleted gracefully, reported it, and removed it."""
        with self._cond:
            pod = copy.deepcopy(self._pod(name, namespace))
            assert pod["metadata"].get("deletionTimestamp"), f"pod {name} is not being deleted"
            self._terminate(pod, exit_code, "Error", "")
            pod["status"]["phase"] = "Failed"
            pod = self._commit("pods", "MODIFIED", pod)
            self._commit("pods", "DELETED", pod)

    def remove_pod(self, name: str, namespace: str | None = None) -> None:
        """Someone outside fedq force-deleted the pod."""
        with self._cond:
            self._commit("pods", "DELETED", copy.deepcopy(self._pod(name, namespace)))

    def _container_base(self, container: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": container["name"],
            "image": container.get("image", ""),
            "imageID": f"docker.io/{container.get('image', '')}@sha256:{'0' * 64}",
            "containerID": f"containerd://{uuid.uuid4().hex}",
            "restartCount": 0,
        }

    def _terminate(self, pod: dict[str, Any], exit_code: int, reason: str, message: str) -> None:
        started = pod["status"].get("startTime") or now_iso()
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": now_iso()}
        if message:
            terminated["message"] = message
        pod["status"]["containerStatuses"] = [
            {**self._container_base(c), "ready": False, "started": False, "state": {"terminated": terminated}}
            for c in pod["spec"]["containers"]
        ]

    # -- what tests do: the API server's own behaviour ------------------------------------------------

    def fail_next(
        self, method: str, path: str, code: int, reason: str = "Conflict", *, times: int = 1, watch: bool = False
    ) -> None:
        """The next ``times`` requests matching ``method``, the ``path`` regex and ``watch`` get this error."""
        with self._cond:
            self._failures.append(_Failure(method, re.compile(path), code, reason, times, watch))

    @contextmanager
    def hold(self, compact: bool = False) -> Iterator[None]:
        """Open watches deliver nothing made inside until the block ends; with ``compact`` they never
        do: history is compacted past those changes, so the watchers get 410 Gone and must list again."""
        with self._cond:
            self._held = True
        try:
            yield
        finally:
            with self._cond:
                if compact:
                    self._compacted = self._rv
                self._held = False
                self._cond.notify_all()

    def expire_watches(self) -> None:
        """Every open watch gets a 410 Gone ERROR event and ends."""
        with self._cond:
            self._compacted = self._rv
            self._expire_gen += 1
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Every open watch ends cleanly, as at a server-side timeout or an API server restart."""
        with self._cond:
            self._drop_gen += 1
            self._cond.notify_all()

    def bookmark(self, resource: str, timeout: float = 10.0) -> str:
        """Open watches of ``resource`` that asked for bookmarks get one; returns its resourceVersion
        once sent (so a drop that follows cannot overtake it)."""
        with self._cond:
            self._rv += 1  # as if other kinds changed: a bookmark moves the resume point past them
            self._bookmark_gen += 1
            self._cond.notify_all()
            sent = self._cond.wait_for(lambda: self._bookmarks_sent.get(resource) == self._bookmark_gen, timeout)
            assert sent, f"no open {resource} watch took the bookmark"
            return str(self._rv)

    # -- what tests read ------------------------------------------------------------------------------

    def pod(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        with self._cond:
            return copy.deepcopy(self._pod(name, namespace))

    def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._cond:
            found = self._objects["secrets"].get((namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def secret_keys(self) -> set[tuple[str, str]]:
        with self._cond:
            return set(self._objects["secrets"])

    def pod_names(self, namespace: str | None = None) -> set[str]:
        with self._cond:
            return {name for ns, name in self._objects["pods"] if ns == (namespace or self.job_namespace)}

    def watches(self, resource: str) -> list[str]:
        """The resourceVersion each watch of ``resource`` asked to start after, in order."""
        with self._cond:
            return [rv for res, rv in self._watches if res == resource]

    def wait_for_watches(self, resource: str, count: int, timeout: float = 10.0) -> list[str]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.watches(resource)) >= count, timeout)
            assert ok, f"expected {count} watches of {resource}, saw {self.watches(resource)}"
            return self.watches(resource)

    def lists(self, resource: str) -> int:
        """How many list requests (first pages) were made for ``resource``."""
        path = f"/api/v1/{resource}"
        return sum(
            1
            for r in list(self.requests)
            if r.method == "GET" and r.path == path and "watch" not in r.query and "continue" not in r.query
        )

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._rv)

    # -- HTTP ------------------------------------------------------------------------------------------------

    def handle(self, handler: _Handler, method: str) -> None:
        url = urlsplit(handler.path)
        path = url.path.rstrip("/")
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        request = Request(method, path, query, body)
        self.requests.append(request)
        try:
            self._inject_failure(request)
            if method == "GET" and path in ("/api/v1/nodes", "/api/v1/pods") and query.get("watch") in ("true", "1"):
                self._watch(handler, path.rsplit("/", 1)[1], query)
                return
            log = _LOG.match(path)
            if method == "GET" and log:
                namespace, name = log.groups()
                handler.send_text(200, self._pod_log(namespace, name, query))
                return
            code, reply = self._route(request)
        except ApiError as err:
            code, reply = err.body["code"], err.body
        except Exception as exc:  # a stub bug: answer 500 and make the test fail at teardown
            self.errors.append(f"{method} {handler.path}: {type(exc).__name__}: {exc}")
            code, reply = 500, status(500, "InternalError", str(exc))
        handler.send_json(code, reply)

    def _inject_failure(self, request: Request) -> None:
        with self._cond:
            for failure in self._failures:
                watching = request.query.get("watch") in ("true", "1")
                matches = failure.method == request.method and failure.path.search(request.path)
                if matches and failure.watch == watching and failure.times > 0:
                    failure.times -= 1
                    raise ApiError(failure.code, failure.reason, f"injected {failure.code} for {request.path}")

    def _route(self, request: Request) -> tuple[int, dict[str, Any]]:
        method, path = request.method, request.path
        if method == "GET" and path in discovery.DOCUMENTS:
            return 200, discovery.DOCUMENTS[path]
        if method == "GET" and path in ("/api/v1/nodes", "/api/v1/pods"):
            return 200, self._list(path.rsplit("/", 1)[1], request.query)
        match = _POD.match(path)
        if match:
            namespace, name, binding = match.groups()
            with self._cond:
                if method == "POST" and name is None:
                    return 201, self._create_pod(namespace, request.body)
                if method == "GET" and name and not binding:
                    return 200, copy.deepcopy(self._pod(name, namespace))
                if method == "DELETE" and name and not binding:
                    return 200, self._delete_pod(namespace, name, request.body or {}, request.query)
                if method == "POST" and name and binding:
                    return 201, self._bind(namespace, name, request.body)
        match = _SECRET.match(path)
        if match:
            with self._cond:
                return self._secret(method, *match.groups(), request.body)
        raise ApiError(404, "NotFound", f"the server could not find the requested resource ({method} {path})")

    def _secret(self, method: str, namespace: str, name: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        """Get, create and replace (unconditionally, or at the body's resourceVersion) one Secret."""
        if namespace not in self.namespaces:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found', name=namespace, kind="namespaces")
        if body is not None:
            client.V1Secret.from_dict(body)
        key = (namespace, name or (body or {}).get("metadata", {}).get("name", ""))
        old = self._objects["secrets"].get(key)
        if method == "POST" and name is None:
            if old is not None:
                raise ApiError(409, "AlreadyExists", f'secrets "{key[1]}" already exists', name=key[1], kind="secrets")
            secret = copy.deepcopy(body)
            secret["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=now_iso())
            return 201, self._commit("secrets", "ADDED", secret)
        if method in ("GET", "PUT") and name:
            if old is None:
                raise ApiError(404, "NotFound", f'secrets "{name}" not found', name=name, kind="secrets")
            if method == "GET":
                return 200, copy.deepcopy(old)
            wanted = body["metadata"].get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on secrets "{name}": changed meanwhile')
            secret = copy.deepcopy(body)
            secret["metadata"].update(
                namespace=namespace, uid=old["metadata"]["uid"], creationTimestamp=old["metadata"]["creationTimestamp"]
            )
            return 200, self._commit("secrets", "MODIFIED", secret)
        raise ApiError(405, "MethodNotAllowed", f"the stub does not serve {method} on secrets")

    def _list(self, resource: str, query: dict[str, str]) -> dict[str, Any]:
        limit = int(query.get("limit") or 0)
        with self._cond:
            token = query.get("continue")
            if token:
                if token not in self._snapshots:
                    raise ApiError(410, "Expired", "the provided continue parameter is too old")
                rv, items = self._snapshots.pop(token)
            else:
                rv = self._rv
                items = [copy.deepcopy(self._objects[resource][k]) for k in sorted(self._objects[resource])]
                on_node = query.get("fieldSelector", "").removeprefix("spec.nodeName=")
                if "fieldSelector" in query:
                    assert on_node != query["fieldSelector"], "the stub filters on spec.nodeName only"
                    items = [i for i in items if i["spec"].get("nodeName") == on_node]
            for item in items:
                item.pop("apiVersion", None)
                item.pop("kind", None)
            metadata: dict[str, Any] = {"resourceVersion": str(rv)}
            if limit and len(items) > limit:
                rest = uuid.uuid4().hex
                self._snapshots[rest] = (rv, items[limit:])
                metadata["continue"] = rest
                items = items[:limit]
        kind = _MODELS[resource].__name__[2:]
        return {"apiVersion": "v1", "kind": f"{kind}List", "metadata": metadata, "items": items}

    def _create_pod(self, namespace: str, body: Any) -> dict[str, Any]:
        if namespace not in self.namespaces:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found', name=namespace, kind="namespaces")
        try:
            client.V1Pod.from_dict(body)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"invalid Pod: {exc}") from exc
        pod = copy.deepcopy(body)
        meta = pod.setdefault("metadata", {})
        name = meta.get("name", "")
        if not _DNS_SUBDOMAIN.match(name):
            raise ApiError(422, "Invalid", f'Pod "{name}" is invalid: metadata.name', name=name, kind="Pod")
        if (namespace, name) in self._objects["pods"]:
            raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists', name=name, kind="pods")
        meta.update(namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=now_iso())
        pod["status"] = {"phase": "Pending", "qosClass": _qos(pod)}
        return self._commit("pods", "ADDED", pod)

    def _delete_pod(self, namespace: str, name: str, options: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        pod = copy.deepcopy(self._pod(name, namespace))
        wanted_uid = (options.get("preconditions") or {}).get("uid")
        if wanted_uid and wanted_uid != pod["metadata"]["uid"]:
            raise ApiError(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: {pod['metadata']['uid']}",
            )
        grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        grace = int(grace if grace is not None else pod["spec"].get("terminationGracePeriodSeconds", 30))
        ended = pod["status"].get("phase") in ("Succeeded", "Failed")
        if grace == 0 or ended or not pod["spec"].get("nodeName"):
            return self._commit("pods", "DELETED", pod)
        if not pod["metadata"].get("deletionTimestamp"):
            pod["metadata"]["deletionTimestamp"] = now_iso(grace)
            pod["metadata"]["deletionGracePeriodSeconds"] = grace
            return self._commit("pods", "MODIFIED", pod)
        return pod

    def _bind(self, namespace: str, name: str, body: Any) -> dict[str, Any]:
        client.V1Binding.from_dict(body)
        pod = copy.deepcopy(self._pod(name, namespace))
        node = body["target"]["name"]
        if pod["spec"].get("nodeName"):
            raise ApiError(409, "Conflict", f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        if pod["metadata"].get("deletionTimestamp"):
            raise ApiError(409, "Conflict", f"pod {name} is being deleted, cannot be assigned to a host")
        pod["spec"]["nodeName"] = node
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso()}]
        self._commit("pods", "MODIFIED", pod)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _watch(self, handler: _Handler, resource: str, query: dict[str, str]) -> None:
        if "resourceVersion" not in query:
            raise ApiError(400, "BadRequest", "this stub serves watches from a resourceVersion only")
        with self._cond:
            self._watches.append((resource, query["resourceVersion"]))
            self._cond.notify_all()
            watch = _Watch(
                resource=resource,
                pos=int(query["resourceVersion"]),
                deadline=time.monotonic() + float(query.get("timeoutSeconds") or 300),
                bookmarks=query.get("allowWatchBookmarks") in ("true", "1"),
                expire_gen=self._expire_gen,
                drop_gen=self._drop_gen,
                bookmark_gen=self._bookmark_gen,
            )
        handler.start_stream()
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._watch_ready(watch), max(0.0, watch.deadline - time.monotonic()))
                events, done = self._watch_batch(watch)
            if not all(handler.send_event(event) for event in events):
                return
            if done:
                break
        handler.end_stream()

    def _watch_ready(self, watch: _Watch) -> bool:
        return (
            self._closing
            or (self._expire_gen, self._drop_gen) != (watch.expire_gen, watch.drop_gen)
            or (not self._held and (watch.pos < self._compacted or bool(self._pending(watch.resource, watch.pos))))
            or (watch.bookmarks and self._bookmark_gen != watch.bookmark_gen and not self._held)
        )

    def _watch_batch(self, watch: _Watch) -> tuple[list[dict[str, Any]], bool]:
        """The events to send now, and whether the stream ends after them."""
        if self._closing or self._drop_gen != watch.drop_gen or time.monotonic() >= watch.deadline:
            return [], True
        if self._expire_gen != watch.expire_gen or (not self._held and watch.pos < self._compacted):
            gone = status(410, "Expired", f"too old resource version: {watch.pos} ({self._compacted})")
            return [{"type": "ERROR", "object": gone}], True
        pending = self._pending(watch.resource, watch.pos)
        if pending:
            watch.pos = pending[-1].rv
            return [{"type": e.type, "object": e.obj} for e in pending], False
        if watch.bookmarks and self._bookmark_gen != watch.bookmark_gen:
            watch.bookmark_gen = self._bookmark_gen
            self._bookmarks_sent[watch.resource] = self._bookmark_gen
            self._cond.notify_all()
            watch.pos = self._rv
            kind = _MODELS[watch.resource].__name__[2:]
            mark = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(watch.pos)}}
            return [{"type": "BOOKMARK", "object": mark}], False
        return [], False

    def _pending(self, resource: str, pos: int) -> list[_Event]:
        return [e for e in self._log if e.rv > pos and e.resource == resource]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    server: ThreadingHTTPServer

    def do_GET(self) -> None:
        self._stub().handle(self, "GET")

    def do_POST(self) -> None:
        self._stub().handle(self, "POST")

    def do_DELETE(self) -> None:
        self._stub().handle(self, "DELETE")

    def do_PUT(self) -> None:
        self._stub().handle(self, "PUT")

    def _stub(self) -> StubApiServer:
        stub: StubApiServer = self.server.stub  # type: ignore[attr-defined]
        return stub

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the stub records requests itself."""

    def send_json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def send_event(self, event: dict[str, Any]) -> bool:
        """One watch event as one chunk; False when the client has gone."""
        data = json.dumps(event).encode() + b"\n"
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return False
        return True

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
