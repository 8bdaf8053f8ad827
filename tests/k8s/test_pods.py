"""The pure mapping between fedq tasks and Pods: names, quantities, requests, and pod state -> task state."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client

from member_agent.backends.base import TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.k8s_pods import (
    PodTemplate,
    build_pod,
    format_quantity,
    label_value,
    pod_name,
    pod_requests,
    task_report,
)
from member_agent.backends.k8s_tracker import TaskTracker

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.mark.parametrize("job_id", ["train", "Train/ResNet 50", "-x-", "ü" * 80, "a" * 300, "a.b_c"])
def test_pod_names_are_dns_labels(job_id: str) -> None:
    name = pod_name(job_id, "worker", 12, 3)
    assert DNS_LABEL.match(name) and len(name) <= 63


def test_pod_names_keep_distinct_tasks_apart() -> None:
    # both slug to "a-b-c-0-e1": the hash of the exact tuple must tell them apart
    assert pod_name("a-b", "c", 0, 1) != pod_name("a", "b-c", 0, 1)
    assert pod_name("job", "w", 0, 1) != pod_name("job", "w", 0, 2)
    assert pod_name("job", "w", 0, 1).startswith("job-w-0-e1-")


@pytest.mark.parametrize("text", ["job-1", "Job_1.x", "with space", "x" * 64, "/leading", "ä"])
def test_label_values_are_valid(text: str) -> None:
    value = label_value(text)
    assert LABEL_VALUE.match(value) and len(value) <= 63
    assert (value == text) == bool(LABEL_VALUE.match(text) and len(text) <= 63)


@pytest.mark.parametrize(
    ("value", "text"), [(2.0, "2"), (0.5, "500m"), (1.25, "1250m"), (34359738368.0, "34359738368"), (0.0, "0")]
)
def test_format_quantity(value: float, text: str) -> None:
    assert format_quantity(value) == text


def test_format_quantity_refuses_negative() -> None:
    with pytest.raises(ValueError, match="negative"):
        format_quantity(-1.0)


def _container(name: str, requests: dict[str, str] | None = None, **kw: Any) -> client.V1Container:
    limits = kw.pop("limits", None)
    return client.V1Container(
        name=name, resources=client.V1ResourceRequirements(requests=requests, limits=limits), **kw
    )


def test_pod_requests_follow_kube_scheduler() -> None:
    spec = client.V1PodSpec(
        containers=[_container("a", {"cpu": "1"}), _container("b", limits={"cpu": "500m", "memory": "1Gi"})],
        init_containers=[
            _container("setup", {"cpu": "3"}),  # runs alone, before the sidecar: peak 3
            _container("proxy", {"cpu": "250m"}, restart_policy="Always"),  # sidecar: runs with everything after
            _container("migrate", {"cpu": "2", "memory": "4Gi"}),  # runs with the sidecar: 2.25 cpu, 4Gi
        ],
        overhead={"cpu": "100m"},
    )
    # running: 1 + 0.5 + 0.25 (sidecar) = 1.75 cpu, 1Gi; init peaks: 3 cpu, 4Gi -> max, plus overhead
    assert pod_requests(spec) == {"cpu": pytest.approx(3.1), "memory": 4 * 2**30}


def test_build_pod_is_schema_valid_and_maps_gpu() -> None:
    launch = TaskLaunch("j", "w", 0, 1, "n", {"cpu": 2.0, "nvidia.com/gpu": 1.0}, walltime=0.2)
    pod = build_pod(launch, PodTemplate(namespace="ns", resource_names={"nvidia.com/gpu": "amd.com/gpu"}))
    raw = client.ApiClient().sanitize_for_serialization(pod)
    assert client.V1Pod.from_dict(raw) == pod
    assert raw["spec"]["activeDeadlineSeconds"] == 1, "a deadline is at least one second"
    assert raw["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2", "amd.com/gpu": "1"}
    assert pod_requests(pod.spec) == {"cpu": 2.0, "amd.com/gpu": 1.0}


def _pod(
    phase: str | None, *, managed: bool = True, container: dict[str, Any] | None = None, **status: Any
) -> client.V1Pod:
    raw: dict[str, Any] = {
        "metadata": {
            "name": "p",
            "namespace": "fedq-jobs",
            "labels": {"app.kubernetes.io/managed-by": "fedq"} if managed else {},
            "annotations": {
                "fedq.io/job-id": "j",
                "fedq.io/task-name": "w",
                "fedq.io/task-index": "2",
                "fedq.io/epoch": "5",
            },
        },
        "spec": {"containers": [{"name": "task"}], "nodeName": "n1"},
        "status": {"phase": phase, **status},
    }
    if container is not None:
        raw["status"]["containerStatuses"] = [
            {"name": "task", "image": "i", "imageID": "", "ready": False, "restartCount": 0, "state": container}
        ]
    pod = client.V1Pod.from_dict(raw)
    assert pod is not None
    return pod


TERMINATED = "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_pod("Pending"), (TaskPhase.PENDING, None, "")),
        (
            _pod("Pending", container={"waiting": {"reason": "ImagePullBackOff"}}),
            (TaskPhase.PENDING, None, "ImagePullBackOff"),
        ),
        (_pod("Running", container={"running": {"startedAt": TERMINATED}}), (TaskPhase.RUNNING, None, "")),
        (
            _pod("Succeeded", container={"terminated": {"exitCode": 0, "reason": "Completed"}}),
            (TaskPhase.SUCCEEDED, 0, ""),
        ),
        (_pod("Failed", container={"terminated": {"exitCode": 3, "reason": "Error"}}), (TaskPhase.FAILED, 3, "Error")),
        (
            _pod("Failed", container={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
            (TaskPhase.FAILED, 137, "OOMKilled"),
        ),
        (
            _pod("Failed", reason="DeadlineExceeded", container={"terminated": {"exitCode": 137}}),
            (TaskPhase.KILLED, 137, "walltime"),
        ),
        (_pod("Failed", reason="Evicted", message="low on memory"), (TaskPhase.FAILED, None, "Evicted")),
    ],
)
def test_task_status_from_pod(pod: client.V1Pod, expected: tuple[TaskPhase, int | None, str]) -> None:
    status = task_report(pod)
    assert status is not None
    assert (status.phase, status.exit_code, status.reason) == expected
    assert (status.job_id, status.task_name, status.index, status.epoch, status.node) == ("j", "w", 2, 5, "n1")


def test_task_status_keeps_the_log_tail() -> None:
    terminated = {"exitCode": 1, "reason": "Error", "message": "Traceback: boom"}
    status = task_report(_pod("Failed", container={"terminated": terminated}))
    assert status is not None and status.log_tail == "Traceback: boom"


def test_pods_that_are_not_fedq_tasks_have_no_task_status() -> None:
    assert task_report(_pod("Running", managed=False)) is None
    broken = _pod("Running")
    assert broken.metadata is not None and broken.metadata.annotations is not None
    broken.metadata.annotations["fedq.io/epoch"] = "not a number"
    assert task_report(broken) is None


def _status(phase: TaskPhase, exit_code: int | None = None) -> TaskReport:
    status = task_report(_pod("Pending"))
    assert status is not None
    return replace(status, phase=phase, exit_code=exit_code)


def test_tracker_reports_each_change_once_and_nothing_after_the_end() -> None:
    tracker = TaskTracker()
    tracker.observe("p", _status(TaskPhase.PENDING))
    tracker.observe("p", _status(TaskPhase.PENDING))
    tracker.observe("p", _status(TaskPhase.RUNNING))
    tracker.observe("p", _status(TaskPhase.FAILED, 2))
    tracker.observe("p", _status(TaskPhase.SUCCEEDED, 0))
    assert [(s.phase, s.exit_code) for s in tracker.drain(0.0)] == [
        (TaskPhase.PENDING, None),
        (TaskPhase.RUNNING, None),
        (TaskPhase.FAILED, 2),
    ]
    tracker.gone("p", _status(TaskPhase.FAILED, 2), 1.0)
    assert tracker.drain(1.0) == []


def test_tracker_reports_a_killed_task_with_the_agents_reason() -> None:
    tracker = TaskTracker()
    tracker.observe("p", _status(TaskPhase.RUNNING))
    assert tracker.kill_requested("p", "preempted")
    tracker.observe("p", _status(TaskPhase.RUNNING))
    tracker.observe("p", _status(TaskPhase.SUCCEEDED, 0))  # the process exited 0 on SIGTERM
    (_, final) = tracker.drain(5.0)
    assert (final.phase, final.reason, final.exit_code) == (TaskPhase.KILLED, "preempted", 0)
    assert not tracker.kill_requested("p", "again"), "an ended task cannot be killed"
    assert tracker.finished_before(5.0) == ["p"] and tracker.finished_before(4.9) == []
