"""The Kubernetes backend against the stub API server: what only a stub can force (410s, dropped and
held watches, injected API errors, a restart) and the details of what the backend sends."""

from __future__ import annotations

from dataclasses import replace

import pytest

from member_agent.backends.base import Backend, LaunchError, NodeView, TaskPhase
from member_agent.backends.kubernetes import KubernetesBackend, KubernetesBackendError
from policies.clock import ManualClock
from tests.k8s.conftest import MakeBackend, StubCluster, stub_api_client
from tests.k8s.real_cluster import RealCluster
from tests.k8s.scenarios import collect, credential_secret_survives_a_new_client, gang, name_of, new_job_id, phases
from tests.k8s.stub_api import StubApiServer

TIMEOUT = 10.0
BINDING = r"/pods/[^/]+/binding$"


def node_view(backend: KubernetesBackend, name: str) -> NodeView:
    return next(v for v in backend.nodes() if v.name == name)


def requests_of(stub: StubApiServer, method: str, path_part: str) -> list[str]:
    return [r.path for r in stub.requests if r.method == method and path_part in r.path]


def test_is_a_backend(cluster: StubCluster) -> None:
    assert isinstance(cluster.make_backend(), Backend)


def test_pod_carries_the_task(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend(kill_grace_seconds=7, default_image="python:3.12-slim")
    (task,) = gang(
        "Train/ResNet 50",
        ["node-a"],
        epoch=4,
        command=("python", "train.py"),
        resources={"cpu": 1.5, "memory": 2 * 2**30, "nvidia.com/gpu": 1},
        walltime=90.5,
    )
    backend.launch([task])
    pod = stub.pod(name_of(task))
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["namespace"] == "fedq-jobs"
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "fedq"
    assert meta["labels"]["fedq.io/epoch"] == "4"
    assert meta["annotations"] == {
        "fedq.io/job-id": "Train/ResNet 50",
        "fedq.io/task-name": "worker",
        "fedq.io/task-index": "0",
        "fedq.io/epoch": "4",
    }
    assert (spec["schedulerName"], spec["restartPolicy"], spec["nodeName"]) == ("fedq", "Never", "node-a")
    assert spec["activeDeadlineSeconds"] == 91
    assert spec["terminationGracePeriodSeconds"] == 7
    assert spec["automountServiceAccountToken"] is False
    (container,) = spec["containers"]
    assert container["image"] == "python:3.12-slim"
    assert container["command"] == ["python", "train.py"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["SCENARIO"] == "yes" and env["FEDQ_JOB_ID"] == "Train/ResNet 50" and env["FEDQ_EPOCH"] == "4"
    expected = {"cpu": "1500m", "memory": str(2 * 2**30), "nvidia.com/gpu": "1"}
    assert container["resources"] == {"requests": expected, "limits": expected}
    assert pod["status"]["qosClass"] == "Guaranteed"


def test_bind_failure_deletes_the_whole_gang(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    tasks = gang(new_job_id(), ["node-a", "node-b", "node-c"])
    stub.fail_next("POST", name_of(tasks[2]) + "/binding$", 409)
    with pytest.raises(LaunchError, match="409"):
        backend.launch(tasks)
    deleted = requests_of(stub, "DELETE", "/pods/")
    assert sorted(p.rsplit("/", 1)[1] for p in deleted) == sorted(name_of(t) for t in tasks)
    assert stub.pod_names() == {name_of(tasks[0]), name_of(tasks[1])}, "bound pods end gracefully"
    for task in tasks[:2]:
        assert stub.pod(name_of(task))["metadata"]["deletionTimestamp"]
        stub.finish_termination(name_of(task))
    cluster.settle(backend)
    assert stub.pod_names() == set()
    assert backend.poll() == [] and backend.tasks() == []
    assert node_view(backend, "node-a").used.get("cpu", 0.0) == 0.0


def test_rollback_leftovers_are_deleted_on_poll(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    tasks = gang(new_job_id(), ["node-a", "node-b"])
    stub.fail_next("POST", BINDING, 500, "InternalError")
    stub.fail_next("DELETE", name_of(tasks[0]) + "$", 503, "ServiceUnavailable")
    with pytest.raises(LaunchError, match="500"):
        backend.launch(tasks)
    assert stub.pod_names() == {name_of(tasks[0])}
    cluster.settle(backend)
    assert backend.poll() == []
    assert stub.pod_names() == set()


def test_bad_gangs_are_refused_before_any_call(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (placed,) = gang(new_job_id(), ["node-a"])
    with pytest.raises(LaunchError, match="without a node"):
        backend.launch([placed, replace(placed, index=1, node="")])
    with pytest.raises(LaunchError, match="same task twice"):
        backend.launch([placed, placed])
    assert [r for r in stub.requests if r.method != "GET"] == []


def test_missing_namespace_is_a_launch_error(cluster: StubCluster) -> None:
    backend = cluster.make_backend(namespace="nowhere")
    with pytest.raises(LaunchError, match='namespaces "nowhere" not found'):
        backend.launch(gang(new_job_id(), ["node-a"]))


def test_success_and_walltime(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    done, late = gang(new_job_id(), ["node-a", "node-b"], walltime=60)
    backend.launch([done])
    backend.launch([late])
    for task in (done, late):
        stub.start_pod(name_of(task))
    stub.finish_pod(name_of(done), 0)
    stub.exceed_deadline(name_of(late))
    got = collect(backend, lambda got: len([s for s in got if s.phase.terminal]) == 2, TIMEOUT)
    final = {s.index: s for s in got if s.phase.terminal}
    assert (final[0].phase, final[0].exit_code) == (TaskPhase.SUCCEEDED, 0)
    assert (final[1].phase, final[1].reason, final[1].exit_code) == (TaskPhase.KILLED, "walltime", 137)
    assert final[0].started_at is not None and final[0].finished_at is not None


def test_pod_deleted_by_someone_else_is_killed(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    stub.start_pod(name_of(task))
    collect(backend, lambda got: bool(phases(got, TaskPhase.RUNNING)), TIMEOUT)
    stub.remove_pod(name_of(task))
    (killed,) = collect(backend, lambda got: bool(got), TIMEOUT)
    assert (killed.phase, killed.reason) == (TaskPhase.KILLED, "deleted")


def test_expired_watch_lists_again_without_losing_or_repeating(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    tasks = gang(new_job_id(), ["node-a", "node-b", "node-c"])
    backend.launch(tasks)
    for task in tasks:
        stub.start_pod(name_of(task))
    collect(backend, lambda got: len(phases(got, TaskPhase.RUNNING)) == 3, TIMEOUT)
    lists, watches = stub.lists("pods"), len(stub.watches("pods"))
    with stub.hold(compact=True):  # none of this reaches the open watch: it gets 410 Gone instead
        stub.finish_pod(name_of(tasks[0]), 3)
        stub.remove_pod(name_of(tasks[1]))
        stub.add_pod("default", "daemon", node="node-c", requests={"cpu": "2"})
        listed_at = stub.resource_version
    stub.wait_for_watches("pods", watches + 1)
    assert stub.lists("pods") == lists + 1
    assert stub.watches("pods")[-1] == listed_at, "the new watch starts where the fresh list was taken"
    changes = backend.poll()
    assert sorted((s.index, s.phase, s.exit_code, s.reason) for s in changes) == [
        (0, TaskPhase.FAILED, 3, "Error"),
        (1, TaskPhase.KILLED, None, "deleted"),
    ]
    assert node_view(backend, "node-c").used["cpu"] == pytest.approx(2.1)
    stub.finish_pod(name_of(tasks[2]), 0)
    after = collect(backend, lambda got: bool(got), TIMEOUT)
    cluster.settle(backend)
    after += backend.poll()
    assert [(s.index, s.phase) for s in after] == [(2, TaskPhase.SUCCEEDED)]


def test_watch_refused_with_http_410_lists_again(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    collect(backend, lambda got: bool(got), TIMEOUT)
    lists, watches = stub.lists("pods"), len(stub.watches("pods"))
    stub.fail_next("GET", r"^/api/v1/pods$", 410, "Expired", watch=True)
    stub.drop_watches()
    stub.wait_for_watches("pods", watches + 1)
    assert stub.lists("pods") == lists + 1
    stub.start_pod(name_of(task))
    (running,) = collect(backend, lambda got: bool(got), TIMEOUT)
    assert running.phase is TaskPhase.RUNNING


def test_dropped_watch_resumes_from_its_last_version(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    cluster.settle(backend)
    last_seen = stub.resource_version  # the marker pod was the last event of any kind
    lists, watches = stub.lists("pods"), len(stub.watches("pods"))
    stub.drop_watches()
    assert stub.wait_for_watches("pods", watches + 1)[-1] == last_seen
    assert stub.lists("pods") == lists, "a resumable watch must not list again"
    mark = stub.bookmark("pods")
    stub.drop_watches()
    assert stub.wait_for_watches("pods", watches + 2)[-1] == mark, "a bookmark moves the resume point"
    stub.start_pod(name_of(task))
    got = collect(backend, lambda got: bool(phases(got, TaskPhase.RUNNING)), TIMEOUT)
    assert [s.phase for s in got] == [TaskPhase.PENDING, TaskPhase.RUNNING]


def test_lists_in_pages(stub: StubApiServer, make_backend: MakeBackend) -> None:
    stub.add_node("node-a")
    for i in range(7):
        stub.add_pod("default", f"daemon-{i}", node="node-a", requests={"cpu": "100m"})
    backend = make_backend(list_page_size=2)
    pages = [r for r in stub.requests if r.path == "/api/v1/pods" and "watch" not in r.query]
    assert [r.query.get("limit") for r in pages] == ["2"] * 4
    assert sum("continue" in r.query for r in pages) == 3
    assert node_view(backend, "node-a").used["cpu"] == pytest.approx(0.7)


def test_capacity_counts_only_pods_holding_resources(stub: StubApiServer, make_backend: MakeBackend) -> None:
    stub.add_node("node-a", cpu="4", memory="8Gi", labels={"zone": "z1"})
    stub.add_pod("kube-system", "proxy", node="node-a", requests={"cpu": "500m", "memory": "1Gi"})
    stub.add_pod("default", "done", node="node-a", requests={"cpu": "2"}, phase="Succeeded")
    stub.add_pod("default", "unscheduled", requests={"cpu": "3"}, phase="Pending")
    backend = make_backend()
    view = node_view(backend, "node-a")
    assert view.allocatable == {"cpu": 4.0, "memory": 8 * 2**30, "pods": 110.0}
    assert view.used == {"cpu": 0.5, "memory": 2**30, "pods": 1.0}
    assert view.free()["cpu"] == 3.5
    assert view.labels["zone"] == "z1"


def test_a_cluster_gpu_resource_reads_and_launches_as_fedqs(cluster: StubCluster, stub: StubApiServer) -> None:
    stub.add_node("node-m", cpu="16", extra={"amd.com/gpu": "4"})
    stub.add_pod("default", "foreign", node="node-m", requests={"cpu": "1", "amd.com/gpu": "1"})
    backend = cluster.make_backend(gpu_resource="amd.com/gpu")
    view = node_view(backend, "node-m")
    assert view.allocatable["nvidia.com/gpu"] == 4.0 and "amd.com/gpu" not in view.allocatable
    assert view.used["nvidia.com/gpu"] == 1.0 and view.free()["nvidia.com/gpu"] == 3.0

    (task,) = gang("needs-a-gpu", ["node-m"], resources={"cpu": 1, "nvidia.com/gpu": 2})
    backend.launch([task])

    (container,) = stub.pod(name_of(task))["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "1", "amd.com/gpu": "2"}
    assert node_view(backend, "node-m").used["nvidia.com/gpu"] == 3.0


def test_node_changes_arrive_by_watch(stub: StubApiServer, make_backend: MakeBackend) -> None:
    stub.add_node("node-a")
    backend = make_backend()
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    stub.add_node("node-g", cpu="16", extra={"nvidia.com/gpu": "4"}, taints=[taint])
    stub.cordon("node-a")

    def seen() -> bool:
        views = {v.name: v for v in backend.nodes()}
        return "node-g" in views and views["node-a"].unschedulable

    assert backend.wait_until(seen, TIMEOUT)
    gpu = node_view(backend, "node-g")
    assert gpu.taints == ("dedicated=gpu:NoSchedule",)
    assert gpu.allocatable["nvidia.com/gpu"] == 4.0


def test_just_bound_pods_count_before_the_watch_reports_them(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"], resources={"cpu": 2.0})
    with stub.hold():
        backend.launch([task])
        assert node_view(backend, "node-a").used["cpu"] == 2.0
    cluster.settle(backend)
    assert node_view(backend, "node-a").used["cpu"] == 2.0, "counted once, not again when the watch reports it"


def test_kill_before_the_watch_reports_the_pods(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    tasks = gang(new_job_id(), ["node-a", "node-b"])
    with stub.hold():
        backend.launch(tasks)
        backend.kill(tasks[0].job_id, reason="preempted")
    for task in tasks:
        assert stub.pod(name_of(task))["metadata"]["deletionTimestamp"]
        stub.finish_termination(name_of(task))
    got = collect(backend, lambda got: len(phases(got, TaskPhase.KILLED)) == 2, TIMEOUT)
    assert [s.phase for s in got].count(TaskPhase.RUNNING) == 0
    assert {s.reason for s in phases(got, TaskPhase.KILLED)} == {"preempted"}


def test_kill_one_epoch(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    job = new_job_id()
    (old,) = gang(job, ["node-a"], epoch=1)
    (new,) = gang(job, ["node-b"], epoch=2)
    backend.launch([old])
    backend.launch([new])
    backend.kill(job, epoch=1, reason="fenced: stale epoch")
    assert stub.pod(name_of(old))["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in stub.pod(name_of(new))["metadata"]
    assert requests_of(stub, "DELETE", "/pods/") == [f"/api/v1/namespaces/fedq-jobs/pods/{name_of(old)}"]
    options = next(r.body for r in stub.requests if r.method == "DELETE")
    assert options["gracePeriodSeconds"] == 30
    assert options["preconditions"]["uid"] == stub.pod(name_of(old))["metadata"]["uid"]


def test_an_elastic_jobs_later_tasks_are_more_pods_of_the_run_and_a_shrink_deletes_only_those_named(
    cluster: StubCluster, stub: StubApiServer
) -> None:
    """An elastic job's gang starts first; the tasks the agent places later (same job and epoch) are
    launched as more pods, created and bound as a gang of their own. A down-to-min shrink
    (``kill(tasks=...)``) deletes only the pods of the tasks named; the job's other pods run on."""
    backend = cluster.make_backend()
    job = new_job_id()
    first, later = gang(job, ["node-a", "node-b"])
    backend.launch([first])
    backend.launch([later])
    assert requests_of(stub, "POST", "/binding") == [
        f"/api/v1/namespaces/fedq-jobs/pods/{name_of(t)}/binding" for t in (first, later)
    ]
    for task in (first, later):
        stub.start_pod(name_of(task))
    got = collect(backend, lambda got: len(phases(got, TaskPhase.RUNNING)) == 2, TIMEOUT)
    assert {s.index for s in phases(got, TaskPhase.RUNNING)} == {0, 1}

    backend.kill(job, 1, "preempted", tasks=[later.task_id])
    assert stub.pod(name_of(later))["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in stub.pod(name_of(first))["metadata"]
    stub.finish_termination(name_of(later))
    (killed,) = collect(backend, lambda got: bool(phases(got, TaskPhase.KILLED)), TIMEOUT)
    assert (killed.index, killed.reason) == (1, "preempted")


def test_kill_failure_is_raised_and_can_be_retried(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    stub.fail_next("DELETE", "/pods/", 500, "InternalError")
    with pytest.raises(KubernetesBackendError, match="500"):
        backend.kill(task.job_id)
    backend.kill(task.job_id)
    assert stub.pod(name_of(task))["metadata"]["deletionTimestamp"]


def test_restarted_backend_reconciles_from_tasks(cluster: StubCluster, stub: StubApiServer) -> None:
    first = cluster.make_backend()
    running, finished = gang(new_job_id(), ["node-a", "node-b"])
    first.launch([running, finished])
    stub.start_pod(name_of(running))
    stub.start_pod(name_of(finished))
    stub.finish_pod(name_of(finished), 0)
    collect(first, lambda got: bool(phases(got, TaskPhase.SUCCEEDED)), TIMEOUT)
    first.close()
    second = cluster.make_backend()
    assert sorted((s.index, s.phase) for s in second.tasks()) == [(0, TaskPhase.RUNNING), (1, TaskPhase.SUCCEEDED)]
    assert second.poll() == [], "what tasks() reports is not reported again as a change"
    stub.finish_pod(name_of(running), 1)
    (failed,) = collect(second, lambda got: bool(got), TIMEOUT)
    assert (failed.index, failed.phase, failed.exit_code) == (0, TaskPhase.FAILED, 1)


def test_finished_pods_are_deleted_after_retention(
    cluster: StubCluster, stub: StubApiServer, clock: ManualClock
) -> None:
    backend = cluster.make_backend(keep_finished_seconds=60)
    (task,) = gang(new_job_id(), ["node-a"])
    backend.launch([task])
    stub.start_pod(name_of(task))
    stub.finish_pod(name_of(task), 0)
    collect(backend, lambda got: bool(phases(got, TaskPhase.SUCCEEDED)), TIMEOUT)
    clock.advance(59)
    assert backend.poll() == []
    assert name_of(task) in stub.pod_names()
    clock.advance(1)
    assert backend.poll() == []
    assert name_of(task) not in stub.pod_names()
    (delete,) = [r for r in stub.requests if r.method == "DELETE"]
    assert delete.body["gracePeriodSeconds"] == 0
    cluster.settle(backend)
    assert backend.poll() == [] and backend.tasks() == []


def test_real_cluster_driver_on_the_stub(cluster: StubCluster, stub: StubApiServer) -> None:
    """The real-cluster driver cannot run its scenarios here (no kubelet); its own calls can be checked."""
    api = stub_api_client(stub)
    driver = RealCluster(api, stub.job_namespace, lambda: stub_api_client(stub))
    try:
        backend = driver.make_backend()
        assert driver.pick_nodes(backend, 4) == ["node-a", "node-b", "node-c", "node-a"]
        driver.occupy("node-b", "other", {"cpu": "250m"})
        driver.precreate("taken")
        taken = driver.pod("taken")
        assert taken is not None and taken["spec"]["schedulerName"] == "fedq" and "nodeName" not in taken["spec"]
        assert driver.pod("missing") is None
        driver.settle(backend)
        assert node_view(backend, "node-a").used["pods"] == 1.0, "settle's marker went to the emptiest node"
        assert node_view(backend, "node-b").used["cpu"] == 0.25
        credential_secret_survives_a_new_client(driver)
        assert {name for ns, name in stub.secret_keys() if ns == stub.job_namespace}, "in the test's namespace"
    finally:
        for made in driver.backends:
            made.close()
        for other in driver.clients:
            other.close()
        api.close()
