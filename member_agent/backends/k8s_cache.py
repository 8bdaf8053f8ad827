"""The agent's picture of the cluster: nodes, the pods that hold their resources, and fedq's task pods.

Fed by two informers (nodes, pods of every namespace) from their watch threads and read by the
backend from the agent's thread, under one lock. Like kube-scheduler it *assumes* the pods it has just
bound (counts them on their nodes) until the watch shows them bound, so a session that runs right after
a launch cannot give the same resources away twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client

from member_agent.backends.base import NodeView, TaskReport
from member_agent.backends.k8s_pods import TERMINAL_POD_PHASES, metadata, name_of, pod_requests, task_report
from member_agent.backends.k8s_tracker import TaskTracker
from policies.clock import Clock
from policies.units import parse_quantity

DELETED = "DELETED"


@dataclass(frozen=True)
class PodRecord:
    """The little the agent keeps of each pod in the cluster."""

    namespace: str
    name: str
    uid: str
    node: str
    active: bool  # not Succeeded/Failed: it still holds its node's resources
    deleting: bool
    requests: dict[str, float]
    task: TaskReport | None  # only for fedq task pods in the agent's namespace


@dataclass(frozen=True)
class Launched:
    """A pod the agent created and bound, as launch() knows it before the watch reports it."""

    name: str
    uid: str
    node: str
    requests: dict[str, float]
    status: TaskReport


@dataclass(frozen=True)
class _Assumed:
    pod: Launched
    seq: int  # launch counter when it was created: a list started later must contain it


def pod_record(pod: client.V1Pod, namespace: str) -> PodRecord:
    meta = metadata(pod)
    phase = pod.status.phase if pod.status else None
    return PodRecord(
        namespace=meta.namespace or "",
        name=meta.name or "",
        uid=meta.uid or "",
        node=(pod.spec.node_name or "") if pod.spec else "",
        active=phase not in TERMINAL_POD_PHASES,
        deleting=meta.deletion_timestamp is not None,
        requests=pod_requests(pod.spec),
        task=task_report(pod) if meta.namespace == namespace else None,
    )


def node_view(node: client.V1Node) -> NodeView:
    spec = node.spec or client.V1NodeSpec()
    allocatable = (node.status.allocatable if node.status else None) or {}
    taints = tuple(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in spec.taints or ())
    return NodeView(
        name=name_of(node),
        allocatable={res: parse_quantity(q) for res, q in allocatable.items()},
        labels=dict(metadata(node).labels or {}),
        unschedulable=bool(spec.unschedulable),
        taints=taints,
    )


class ClusterCache:
    """The informers' copy of the cluster (nodes, pods, fedq's tasks) that the backend reads instead of the API."""

    def __init__(self, namespace: str, clock: Clock) -> None:
        self._namespace = namespace
        self._clock = clock
        self._changed = threading.Condition(threading.RLock())
        self._nodes: dict[str, NodeView] = {}
        self._pods: dict[tuple[str, str], PodRecord] = {}
        self._tracker = TaskTracker()
        self._assumed: dict[str, _Assumed] = {}
        self._launch_seq = 0
        self._in_flight: set[str] = set()
        self._vanished: dict[str, TaskReport] = {}  # in-flight pods whose deletion the watch already saw
        self._rolled_back: set[str] = set()
        self.node_sink = _NodeSink(self)
        self.pod_sink = _PodSink(self)

    # -- fed by the informers -------------------------------------------------------------------

    def replace_nodes(self, nodes: Iterable[client.V1Node]) -> None:
        with self._changed:
            self._nodes = {view.name: view for view in map(node_view, nodes)}
            self._changed.notify_all()

    def apply_node(self, event_type: str, node: client.V1Node) -> None:
        with self._changed:
            if event_type == DELETED:
                self._nodes.pop(name_of(node), None)
            else:
                self._nodes[name_of(node)] = node_view(node)
            self._changed.notify_all()

    def launch_seq(self) -> int:
        with self._changed:
            return self._launch_seq

    def replace_pods(self, pods: Iterable[client.V1Pod], initial: bool, listed_after_seq: int) -> None:
        """Reconcile with a fresh list: what changed is reported once, what vanished counts as gone."""
        with self._changed:
            fresh = {(r.namespace, r.name): r for r in (pod_record(p, self._namespace) for p in pods)}
            for key in self._pods.keys() - fresh.keys():
                self._remove(self._pods[key])
            for record in fresh.values():
                self._upsert(record, initial)
            listed = {name for ns, name in fresh if ns == self._namespace}
            for name, assumed in list(self._assumed.items()):
                if assumed.seq <= listed_after_seq and name not in listed:
                    del self._assumed[name]
                    self._tracker.gone(name, assumed.pod.status, self._clock.now())
            self._rolled_back &= listed
            self._changed.notify_all()

    def apply_pod(self, event_type: str, pod: client.V1Pod) -> None:
        with self._changed:
            record = pod_record(pod, self._namespace)
            if event_type == DELETED:
                self._remove(record)
            else:
                self._upsert(record, initial=False)
            self._changed.notify_all()

    def _hidden(self, name: str) -> bool:
        return name in self._in_flight or name in self._rolled_back

    def _upsert(self, record: PodRecord, initial: bool) -> None:
        self._pods[(record.namespace, record.name)] = record
        if record.task is None:
            return
        if record.node or not record.active:
            self._assumed.pop(record.name, None)
        if self._hidden(record.name):
            return
        if initial:
            self._tracker.baseline(record.name, record.task, self._clock.now())
        else:
            self._tracker.observe(record.name, record.task)

    def _remove(self, record: PodRecord) -> None:
        self._pods.pop((record.namespace, record.name), None)
        if record.task is None:
            return
        self._assumed.pop(record.name, None)
        if record.name in self._in_flight:
            self._vanished[record.name] = record.task
        elif record.name in self._rolled_back:
            self._rolled_back.discard(record.name)
        else:
            self._tracker.gone(record.name, record.task, self._clock.now())

    # -- used by the backend ----------------------------------------------------------------------

    def begin_launch(self, names: Iterable[str]) -> None:
        """Keep a gang's pods out of the reports until the whole gang is bound (or rolled back)."""
        with self._changed:
            self._in_flight.update(names)

    def launched(self, pods: Sequence[Launched]) -> None:
        """The whole gang is bound: report each task and count it on its node until the watch does."""
        with self._changed:
            self._launch_seq += 1
            now = self._clock.now()
            for pod in pods:
                self._in_flight.discard(pod.name)
                vanished = self._vanished.pop(pod.name, None)
                if vanished is not None:
                    self._tracker.gone(pod.name, vanished, now)
                    continue
                record = self._pods.get((self._namespace, pod.name))
                if record is not None and record.task is not None:
                    self._tracker.observe(pod.name, record.task)
                else:
                    self._tracker.observe(pod.name, pod.status)
                if record is None or (record.active and not record.node):
                    self._assumed[pod.name] = _Assumed(pod, self._launch_seq)
            self._changed.notify_all()

    def rolled_back(self, names: Iterable[str], maybe_exist: Iterable[str]) -> None:
        """A gang failed: pods that may exist stay hidden until the watch (or a relist) sees them gone."""
        with self._changed:
            possible = set(maybe_exist)
            for name in names:
                self._in_flight.discard(name)
                already_gone = self._vanished.pop(name, None) is not None
                if name in possible and not already_gone:
                    self._rolled_back.add(name)

    def kill_targets(
        self, job_id: str, epoch: int | None, reason: str, tasks: Collection[str] | None = None
    ) -> list[tuple[str, str]]:
        """(name, uid) of the job's pods to delete (only those of the task ids ``tasks`` when given);
        records why, so their end reports that reason."""
        chosen = None if tasks is None else set(tasks)
        with self._changed:
            candidates: dict[str, tuple[str, TaskReport, bool]] = {
                name: (a.pod.uid, a.pod.status, False) for name, a in self._assumed.items()
            }
            for (ns, name), record in self._pods.items():
                if ns == self._namespace and record.task is not None and not self._hidden(name):
                    candidates[name] = (record.uid, record.task, record.deleting)
            targets = []
            for name, (uid, status, deleting) in candidates.items():
                if status.job_id != job_id or (epoch is not None and status.epoch != epoch):
                    continue
                if chosen is not None and status.task_id not in chosen:
                    continue
                if self._tracker.kill_requested(name, reason) and not deleting:
                    targets.append((name, uid))
            return targets

    def finished_garbage(self, keep_finished_seconds: float | None) -> list[tuple[str, str]]:
        """(name, uid) of finished pods whose final status was handed out (or adopted) long enough ago."""
        if keep_finished_seconds is None:
            return []
        with self._changed:
            out = []
            for name in self._tracker.finished_before(self._clock.now() - keep_finished_seconds):
                record = self._pods.get((self._namespace, name))
                if record is None:
                    self._tracker.forget_final(name)
                elif not record.deleting:
                    out.append((name, record.uid))
            return out

    def orphans(self) -> list[tuple[str, str]]:
        """(name, uid) of rolled-back pods that still exist and are not being deleted."""
        with self._changed:
            records = (self._pods.get((self._namespace, name)) for name in self._rolled_back)
            return [(r.name, r.uid) for r in records if r is not None and not r.deleting]

    def forget_final(self, name: str) -> None:
        with self._changed:
            self._tracker.forget_final(name)

    def drain(self) -> list[TaskReport]:
        with self._changed:
            return self._tracker.drain(self._clock.now())

    def tasks(self) -> list[TaskReport]:
        with self._changed:
            out = {
                name: self._tracker.status_of(name) or a.pod.status
                for name, a in self._assumed.items()
                if (self._namespace, name) not in self._pods
            }
            for (ns, name), record in self._pods.items():
                if ns == self._namespace and record.task is not None and not self._hidden(name):
                    out[name] = self._tracker.status_of(name) or record.task
            return list(out.values())

    def nodes(self) -> list[NodeView]:
        with self._changed:
            used: dict[str, dict[str, float]] = {}
            holders: list[tuple[str, dict[str, float]]] = [
                (r.node, r.requests) for r in self._pods.values() if r.active and r.node
            ]
            holders += [
                (a.pod.node, a.pod.requests)
                for name, a in self._assumed.items()
                if not (record := self._pods.get((self._namespace, name))) or not record.node
            ]
            for node, requests in holders:
                total = used.setdefault(node, {"pods": 0.0})
                total["pods"] += 1.0
                for res, amount in requests.items():
                    total[res] = total.get(res, 0.0) + amount
            return [replace(view, used=used.get(name, {})) for name, view in sorted(self._nodes.items())]

    def has_changes(self) -> bool:
        with self._changed:
            return self._tracker.has_pending()

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` holds, re-checking at each cluster change; False on timeout."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)


class _NodeSink:
    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache

    def list_started(self) -> None:
        """Nodes need no bookkeeping across a list."""

    def replace(self, items: list[Any], initial: bool) -> None:
        self._cache.replace_nodes(items)

    def apply(self, event_type: str, obj: Any) -> None:
        self._cache.apply_node(event_type, obj)


class _PodSink:
    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache
        self._seq_at_list = 0

    def list_started(self) -> None:
        self._seq_at_list = self._cache.launch_seq()

    def replace(self, items: list[Any], initial: bool) -> None:
        self._cache.replace_pods(items, initial, self._seq_at_list)

    def apply(self, event_type: str, obj: Any) -> None:
        self._cache.apply_pod(event_type, obj)
