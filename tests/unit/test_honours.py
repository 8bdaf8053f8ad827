"""Fields only some backends honour keep a job off the clusters that cannot (federation.capabilities):
the global cycle dispatches an image job only to a cluster that reported it honours images, a job no
cluster could honour is marked for it, and an agent handed one all the same fails it at once."""

from __future__ import annotations

from federation import capabilities
from federation.config import FederationConfig
from federation.models import JobRecord, JobState, QueueTree
from federation.models.cluster import Assignment, ClusterReport, NodeReport, ReportReply
from federation.models.job import JobSpecBody, TaskSpec
from federation.models.queue import QueueTreeConfig
from federation.scheduler.cycle import GlobalScheduler
from federation.scheduler.state import FederationState
from member_agent.agent import Agent
from member_agent.backends import honoured_fields
from member_agent.backends.base import NodeView
from member_agent.backends.simulated import SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock
from tests.unit.records import job_record

NOW = 1000.0
CONFIG = FederationConfig.model_validate({"cluster": {"lostAfter": "1h", "requeueAfter": "1h"}})
NODE = NodeReport(name="n", allocatable={"cpu": 8}, free={"cpu": 8})


def _image_job(job_id: str, cpu: float = 1.0, **task: str) -> JobRecord:
    record = job_record(job_id, [cpu], JobState.PENDING)
    fields = {"name": "t0", "resources": {"cpu": cpu}, **task}
    spec = record.spec.model_copy(update={"tasks": [TaskSpec.model_validate(fields)]})
    return record.model_copy(update={"spec": spec})


def _federation(*clusters: tuple[str, list[str]]) -> FederationState:
    state = FederationState()
    state.set_queues(QueueTree(QueueTreeConfig.model_validate({"queues": [{"name": "q"}]})))
    for name, honours in clusters:
        state.set_cluster(name, {"region": "eu"}, cordoned=False)
        state.set_report(name, NOW, ClusterReport(nodes=[NODE], honours=honours))
    return state


def test_the_fields_a_job_uses_are_named_by_their_first_use() -> None:
    spec = JobSpecBody.model_validate(
        {
            "queue": "q",
            "tasks": [{"name": "a"}, {"name": "b", "image": "busybox:1.36", "workingDir": "/w"}, {"name": "c"}],
            "runtimeEnv": {"env_vars": {"A": "1"}},
        }
    )
    assert capabilities.used(spec) == {
        "image": "spec.tasks[1].image",
        "workingDir": "spec.tasks[1].workingDir",
        "runtimeEnv": "spec.runtimeEnv",
    }
    assert capabilities.unhonoured(spec, honoured_fields("kubernetes")) == {"runtimeEnv": "spec.runtimeEnv"}
    plain = JobSpecBody.model_validate({"queue": "q", "tasks": [{}], "clusterSelector": {"region": "eu"}})
    assert capabilities.selector(plain) is plain.cluster_selector  # no copy per job when nothing is used


def test_an_image_job_is_dispatched_only_where_images_are_honoured() -> None:
    state = _federation(("ray", sorted(honoured_fields("ray"))), ("k8s", sorted(honoured_fields("kubernetes"))))
    scheduler = GlobalScheduler(CONFIG, ManualClock(NOW))
    for index in range(2):  # 5 of 8 cpus each: the second fits only the idle Ray cluster, where it may not go
        state.upsert_job(_image_job(f"img-{index}", 5.0, image="python:3.12-slim"), index + 1, b"")
    state.upsert_job(job_record("plain", [5.0], JobState.PENDING), 10, b"")
    assert sorted(scheduler.plan(state).dispatches) == [("img-0", "k8s"), ("plain", "ray")]


def test_a_job_no_cluster_honours_is_marked_unschedulable_saying_what_it_needs() -> None:
    state = _federation(("ray", ["runtimeEnv"]))
    state.upsert_job(_image_job("img", imagePullPolicy="Always"), 1, b"")
    plan = GlobalScheduler(CONFIG, ManualClock(NOW)).plan(state)
    assert plan.dispatches == []
    why = state.never_fits(state.entries["img"].info)
    assert why is not None and why.part == "clusterSelector"
    assert "honours.fedq.io/imagePullPolicy=true" in why.reason
    state.set_report("ray", NOW + 1, ClusterReport(nodes=[NODE], honours=["runtimeEnv", "imagePullPolicy"]))
    assert state.never_fits(state.entries["img"].info) is None  # what a cluster honours is read from each report


class _Ray(SimulatedBackend):
    name = "ray"


def test_an_agent_fails_a_job_its_backend_would_run_wrong_and_reports_what_it_honours() -> None:
    clock = ManualClock(0.0)
    backend = _Ray([NodeView("n0", {"cpu": 2.0})], clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    assert agent.build_report().honours == ["runtimeEnv"]
    record = _image_job("img", image="busybox:1.36").model_copy(update={"state": JobState.DISPATCHED, "epoch": 1})
    agent.handle_reply(ClusterReport(nodes=[]), ReportReply(assignments=[Assignment.of(record)]))
    sent = [(u.state, u.reason) for u in agent.tracker.outbox()]
    assert sent == [
        (JobState.ADMITTED, ""),
        (JobState.FAILED, "the ray backend of this cluster does not honour image (spec.tasks[0].image)"),
    ]
    agent.schedule()
    assert backend.tasks() == []
