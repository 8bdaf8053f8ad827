"""The acceptance scenarios, written once and run against the stub API server and against a real cluster.

A scenario talks to the backend only through the Backend protocol and to the cluster through a
``Cluster`` driver: against the stub the driver plays the kubelet (starts pods, ends them with an exit
code, finishes graceful deletions); against a real cluster the kubelet does that and the driver's kubelet
steps do nothing, because the pods' own commands exit with the code the scenario expects.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pytest

from federation.models.job import JobSpecBody
from member_agent.backends.base import LaunchError, TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.k8s_pods import pod_name
from member_agent.backends.kubernetes import KubernetesBackend
from member_agent.credentials import Credential
from member_agent.k8s_credentials import SecretCredentials
from member_agent.tracker import LocalJob

SLEEP_FOREVER = ("sh", "-c", "sleep 3600")


class Cluster(Protocol):
    timeout: float  # how long a pod may take to reach a state (image pulls on a real cluster)
    image: str  # an image with a shell that the nodes can pull

    def credentials(self, name: str) -> SecretCredentials:
        """A store on Secret ``name`` through an API client of its own, as a new agent pod would have."""
        ...

    def make_backend(self, **settings: Any) -> KubernetesBackend: ...

    def pick_nodes(self, backend: KubernetesBackend, count: int) -> list[str]: ...

    def run(self, pod: str) -> None:
        """The kubelet starts the pod's container."""

    def exit(self, pod: str, code: int) -> None:
        """The pod's container exits with ``code``."""

    def terminate(self, pod: str) -> None:
        """The kubelet finishes a graceful deletion."""

    def overrun(self, pod: str) -> None:
        """The kubelet ends the pod at its activeDeadlineSeconds."""

    def occupy(self, node: str, name: str, requests: dict[str, str]) -> None:
        """A pod fedq does not manage starts on ``node`` with these requests."""

    def precreate(self, name: str) -> None:
        """A pod named ``name`` already exists in the job namespace."""

    def pod(self, name: str) -> dict[str, Any] | None:
        """The pod as the API server has it (camelCase dict), or None."""

    def settle(self, backend: KubernetesBackend) -> None:
        """Return once the backend has processed every pod event the server sent before this call."""


def new_job_id() -> str:
    return f"job-{uuid.uuid4().hex[:8]}"


def gang(
    job_id: str,
    nodes: Sequence[str],
    *,
    epoch: int = 1,
    command: tuple[str, ...] = SLEEP_FOREVER,
    resources: dict[str, float] | None = None,
    walltime: float | None = None,
) -> list[TaskLaunch]:
    return [
        TaskLaunch(
            job_id=job_id,
            task_name="worker",
            index=i,
            epoch=epoch,
            node=node,
            resources=resources if resources is not None else {"cpu": 0.1, "memory": 32 * 2**20},
            command=command,
            env={"SCENARIO": "yes"},
            walltime=walltime,
        )
        for i, node in enumerate(nodes)
    ]


def name_of(task: TaskLaunch) -> str:
    return pod_name(task.job_id, task.task_name, task.index, task.epoch)


def collect(backend: KubernetesBackend, done: Callable[[list[TaskReport]], bool], timeout: float) -> list[TaskReport]:
    """poll() until ``done(everything so far)``, waking on the backend's change signal, within ``timeout``."""
    got: list[TaskReport] = []
    deadline = time.monotonic() + timeout
    while not done(got):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out after {timeout}s; statuses so far: {got}")
        backend.wait_for_changes(remaining)
        got += backend.poll()
    return got


def phases(statuses: Sequence[TaskReport], phase: TaskPhase) -> list[TaskReport]:
    return [s for s in statuses if s.phase is phase]


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """For server-side conditions the backend cannot signal (a real cluster's state)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


# -- the scenarios ---------------------------------------------------------------------------------------


def gang_binds_all(cluster: Cluster) -> None:
    """A 3-task gang: three pods, each bound to the node its task names, reported PENDING then RUNNING."""
    backend = cluster.make_backend()
    nodes = cluster.pick_nodes(backend, 3)
    tasks = gang(new_job_id(), nodes)
    backend.launch(tasks)
    for task in tasks:
        pod = cluster.pod(name_of(task))
        assert pod is not None and pod["spec"]["nodeName"] == task.node
        assert pod["spec"]["schedulerName"] == "fedq"
    # Until every task is reported: a pod may be reported twice before the last one is (seen under load).
    first = collect(backend, lambda got: len({s.index for s in got}) >= 3, cluster.timeout)
    assert {(s.index, s.node) for s in first} == {(t.index, t.node) for t in tasks}
    for task in tasks:
        cluster.run(name_of(task))
    running = collect(backend, lambda got: len(phases(got, TaskPhase.RUNNING)) == 3, cluster.timeout)
    assert {s.index for s in phases(running, TaskPhase.RUNNING)} == {0, 1, 2}
    backend.kill(tasks[0].job_id)


def gang_rolls_back(cluster: Cluster) -> None:
    """The third pod cannot be created: the first two are deleted, nothing is reported, LaunchError."""
    backend = cluster.make_backend()
    tasks = gang(new_job_id(), cluster.pick_nodes(backend, 3))
    cluster.precreate(name_of(tasks[2]))
    with pytest.raises(LaunchError, match="409"):
        backend.launch(tasks)
    wait_for(lambda: all(cluster.pod(name_of(t)) is None for t in tasks[:2]), cluster.timeout, "rollback deletes")
    assert cluster.pod(name_of(tasks[2])) is not None, "the pod that was there before must not be touched"
    cluster.settle(backend)
    assert backend.poll() == []
    assert [s for s in backend.tasks() if s.job_id == tasks[0].job_id] == []


def exit_code_reported(cluster: Cluster) -> None:
    """A pod whose container exits with 3 reports FAILED with exit code 3."""
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), cluster.pick_nodes(backend, 1), command=("sh", "-c", "exit 3"))
    backend.launch([task])
    cluster.run(name_of(task))
    cluster.exit(name_of(task), 3)
    got = collect(backend, lambda got: any(s.phase.terminal for s in got), cluster.timeout)
    final = got[-1]
    assert (final.phase, final.exit_code, final.task_id) == (TaskPhase.FAILED, 3, task.task_id)
    assert len([s for s in got if s.phase.terminal]) == 1


def cancel_deletes_pods(cluster: Cluster) -> None:
    """kill() deletes the job's pods with the grace period; each task ends KILLED once, with the reason."""
    backend = cluster.make_backend(kill_grace_seconds=5)
    tasks = gang(new_job_id(), cluster.pick_nodes(backend, 2))
    backend.launch(tasks)
    for task in tasks:
        cluster.run(name_of(task))
    collect(backend, lambda got: len(phases(got, TaskPhase.RUNNING)) == 2, cluster.timeout)
    backend.kill(tasks[0].job_id, reason="cancelled")
    for task in tasks:
        pod = cluster.pod(name_of(task))
        assert pod is None or pod["metadata"].get("deletionTimestamp"), "kill must delete the pod"
        cluster.terminate(name_of(task))
    got = collect(backend, lambda got: len(phases(got, TaskPhase.KILLED)) == 2, cluster.timeout + 10)
    assert all(s.reason == "cancelled" for s in got) and len(got) == 2
    wait_for(lambda: all(cluster.pod(name_of(t)) is None for t in tasks), cluster.timeout, "pods to go")


def walltime_kills(cluster: Cluster) -> None:
    """A task past its walltime is ended by the kubelet (activeDeadlineSeconds) and reads KILLED "walltime"."""
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), cluster.pick_nodes(backend, 1), walltime=5)
    backend.launch([task])
    cluster.run(name_of(task))
    cluster.overrun(name_of(task))
    got = collect(backend, lambda got: any(s.phase.terminal for s in got), cluster.timeout + 5)
    assert (got[-1].phase, got[-1].reason) == (TaskPhase.KILLED, "walltime")


def foreign_pods_use_capacity(cluster: Cluster) -> None:
    """A pod fedq does not manage takes its requests out of its node's free capacity."""
    backend = cluster.make_backend()
    (node,) = cluster.pick_nodes(backend, 1)

    def used_cpu() -> float:
        view = next(v for v in backend.nodes() if v.name == node)
        return view.used.get("cpu", 0.0)

    before = used_cpu()
    cluster.occupy(node, f"other-{uuid.uuid4().hex[:6]}", {"cpu": "250m", "memory": "64Mi"})
    assert backend.wait_until(lambda: abs(used_cpu() - before - 0.25) < 1e-9, cluster.timeout), (
        f"cpu used on {node} stayed {used_cpu()} (was {before})"
    )
    view = next(v for v in backend.nodes() if v.name == node)
    assert view.free()["cpu"] == pytest.approx(view.allocatable["cpu"] - before - 0.25)


def launches_of(job_id: str, spec: dict[str, Any], node: str) -> list[TaskLaunch]:
    """A job's launches as its agent makes them from the submitted spec (every task on ``node``)."""
    body = JobSpecBody.model_validate({"queue": "q", **spec})
    job = LocalJob(job_id, 1, spec=body)
    return job.launches({(task.name, index): node for task in body.tasks for index in range(task.replicas)})


def task_image_is_used(cluster: Cluster) -> None:
    """A task that names an image runs in exactly that image (with its pull policy and working directory);
    a task that names none gets the cluster's defaultImage."""
    backend = cluster.make_backend(default_image="registry.invalid/fedq/default:0")
    (node,) = cluster.pick_nodes(backend, 1)
    spec = {
        "tasks": [
            {"name": "own", "image": cluster.image, "imagePullPolicy": "IfNotPresent", "workingDir": "/tmp"}
            | {"command": ["sh", "-c", 'test "$(pwd)" = /tmp'], "resources": {"cpu": "100m", "memory": "32Mi"}},
            {"name": "plain", "command": list(SLEEP_FOREVER), "resources": {"cpu": "100m", "memory": "32Mi"}},
        ]
    }
    own, plain = launches_of(new_job_id(), spec, node)
    backend.launch([own])
    backend.launch([plain])
    (container,) = _pod(cluster, own)["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"], container["workingDir"]) == (
        cluster.image,
        "IfNotPresent",
        "/tmp",
    )
    (default,) = _pod(cluster, plain)["spec"]["containers"]
    assert default["image"] == "registry.invalid/fedq/default:0" and "workingDir" not in default
    cluster.run(name_of(own))
    cluster.exit(name_of(own), 0)  # on a real cluster: the test in /tmp passed in that image
    got = collect(backend, lambda got: any(s.task_id == own.task_id and s.phase.terminal for s in got), cluster.timeout)
    assert [s.phase for s in got if s.task_id == own.task_id][-1] is TaskPhase.SUCCEEDED
    backend.kill(own.job_id)


def gpu_is_requested_by_its_kubernetes_name(cluster: Cluster) -> None:
    """A job asking for ``gpu`` (the federation's alias) gets a pod requesting ``nvidia.com/gpu``; a node's
    GPUs read under the same name. The pod is only created and bound here: a node without GPUs refuses it."""
    backend = cluster.make_backend()
    (node,) = cluster.pick_nodes(backend, 1)
    resources = {"cpu": "100m", "memory": "32Mi", "gpu": 1}
    (task,) = launches_of(new_job_id(), {"tasks": [{"command": list(SLEEP_FOREVER), "resources": resources}]}, node)
    backend.launch([task])
    (container,) = _pod(cluster, task)["spec"]["containers"]
    expected = {"cpu": "100m", "memory": str(32 * 2**20), "nvidia.com/gpu": "1"}
    assert container["resources"] == {"requests": expected, "limits": expected}
    assert all("gpu" not in view.allocatable for view in backend.nodes())
    backend.kill(task.job_id)


def credential_secret_survives_a_new_client(cluster: Cluster) -> None:
    """The agent's credential in a Secret: written at join, read by a new agent (pod) without a token,
    replaced in place at a re-join."""
    name = "fedq-agent-credential"  # the name configs/k8s/ lets the agent use
    joined = Credential("https://fed.example", "k8s-a", "fedq_cluster_first", lease=90.0)
    cluster.credentials(name).save(joined)
    assert cluster.credentials(name).load() == joined
    cluster.credentials(name).save(Credential("https://fed.example", "k8s-a", "fedq_cluster_second"))
    assert cluster.credentials(name).load().token == "fedq_cluster_second"


def _pod(cluster: Cluster, task: TaskLaunch) -> dict[str, Any]:
    pod = cluster.pod(name_of(task))
    assert pod is not None, f"no pod for {task.task_id}"
    return pod


SCENARIOS: list[Callable[[Cluster], None]] = [
    gang_binds_all,
    gang_rolls_back,
    exit_code_reported,
    cancel_deletes_pods,
    walltime_kills,
    foreign_pods_use_capacity,
    task_image_is_used,
    gpu_is_requested_by_its_kubernetes_name,
    credential_secret_survives_a_new_client,
]
