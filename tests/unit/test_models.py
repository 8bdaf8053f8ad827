"""Job spec and queue tree validation: good input parses, bad input names the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from federation.jobs import expand
from federation.models import JobManifest, JobRecord, JobState, QueueTree, QueueTreeConfig
from federation.models.job import JobEvent


def job(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"queue": "research.vision", "tasks": [{"replicas": 2, "resources": {"cpu": "1"}}]}
    body.update(spec)
    return {"apiVersion": "fedq/v1", "kind": "Job", "metadata": {"name": "train"}, "spec": body}


def error_fields(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        JobManifest.model_validate(doc)
    return [".".join(str(p) for p in err["loc"]) for err in info.value.errors()]


def test_quantities_and_durations_are_parsed_to_base_units() -> None:
    manifest = JobManifest.model_validate(
        job(
            walltime="1h30m",
            tasks=[{"replicas": 4, "resources": {"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": 1}}],
        )
    )
    assert manifest.spec.walltime == 5400.0
    assert manifest.spec.total_resources() == {"cpu": 2.0, "memory": 4 * 4 * 2**30, "nvidia.com/gpu": 4.0}
    assert manifest.spec.gang_size == 4


def test_root_prefix_is_optional_in_queue_paths() -> None:
    assert JobManifest.model_validate(job(queue="root.research.vision")).spec.queue == "research.vision"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"tasks": [{"replicas": 0}]}, "spec.tasks.0.replicas"),
        ({"tasks": [{"replicas": -3}]}, "spec.tasks.0.replicas"),
        ({"minAvailable": 5}, "spec"),
        ({"tasks": [{"resources": {"cpu": "lots"}}]}, "spec.tasks.0.resources"),
        ({"tasks": [{"resources": {"cpu": "-1"}}]}, "spec.tasks.0.resources"),
        ({"tasks": [{"resources": {"bad name!": 1}}]}, "spec.tasks.0.resources"),
        ({"walltime": "soon"}, "spec.walltime"),
        ({"walltime": "0s"}, "spec.walltime"),
        ({"colour": "blue"}, "spec.colour"),
        ({"queue": "Research/Vision"}, "spec.queue"),
        ({"tasks": []}, "spec.tasks"),
        ({"clusterSelector": {"region": "eu west"}}, "spec.clusterSelector"),
        ({"array": {"count": 0}}, "spec.array.count"),
        ({"tasks": [{"name": "a"}, {"name": "a"}]}, "spec"),
    ],
)
def test_bad_specs_name_the_field(spec: dict[str, Any], field: str) -> None:
    assert field in error_fields(job(**spec))


def test_min_available_over_replicas_says_so() -> None:
    with pytest.raises(ValidationError, match=r"minAvailable \(5\) is more than the job's 2 tasks"):
        JobManifest.model_validate(job(minAvailable=5))


def test_wrong_api_version_is_refused() -> None:
    doc = job()
    doc["apiVersion"] = "batch/v1"
    assert "apiVersion" in error_fields(doc)


TREE = {
    "queues": [
        {
            "name": "research",
            "guarantee": {"cpu": 8},
            "children": [
                {"name": "vision", "tenants": ["alice"]},
                {"name": "nlp"},
            ],
        },
    ]
}


def test_queue_tree_paths_leaves_and_permissions() -> None:
    tree = QueueTree(QueueTreeConfig.model_validate(TREE))
    assert sorted(tree.nodes) == ["research", "research.nlp", "research.vision"]
    assert {node.path for node in tree.leaves()} == {"research.nlp", "research.vision"}
    assert tree.may_submit("alice", "research.vision")
    assert not tree.may_submit("bob", "research.vision")
    assert tree.may_submit("bob", "research.nlp")  # no tenant list: open
    assert not tree.may_submit("alice", "research")  # not a leaf


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ({"name": "a", "guarantee": {"cpu": 8}, "cap": {"cpu": 4}}, "exceeds its cap"),
        (
            {"name": "a", "guarantee": {"cpu": 2}, "children": [{"name": "b", "guarantee": {"cpu": 3}}]},
            "more than its own",
        ),
        ({"name": "a", "weight": 0}, "greater than 0"),
        ({"name": "a", "children": [{"name": "b"}, {"name": "b"}]}, "unique"),
        ({"name": "a", "tenants": ["x"], "children": [{"name": "b"}]}, "only leaf queues"),
    ],
)
def test_bad_queue_trees_are_refused(queue: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        QueueTreeConfig.model_validate({"queues": [queue]})


def stored_record() -> JobRecord:
    manifest = JobManifest.model_validate(
        job(
            walltime="2h",
            minAvailable=3,
            clusterSelector={"region": "eu"},
            tasks=[
                {"name": "head", "resources": {"cpu": "500m", "memory": "1Gi"}, "env": {"MODE": "x"}},
                {"name": "worker", "replicas": 3, "resources": {"nvidia.com/gpu": 1}, "command": ["run", "--fast"]},
            ],
        )
    )
    return expand(manifest, "alice", 100.0)[0]


def test_a_stored_record_reads_back_as_written() -> None:
    """Reading skips the checks the record passed when stored, and must still give the same record."""
    record = stored_record()
    assert JobRecord.from_bytes(record.to_bytes()) == record


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("priority",), "high", "priority"),
        (("spec", "tasks", 1, "replicas"), 0, "spec.tasks.1.replicas"),
        (("spec", "tasks", 0, "resources", "cpu"), "lots", "spec.tasks.0.resources.cpu"),
        (("spec", "walltime"), "soon", "spec.walltime"),
    ],
)
def test_a_stored_record_is_still_type_checked(path: tuple[str | int, ...], value: Any, field: str) -> None:
    doc = json.loads(stored_record().to_bytes())
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ValidationError) as info:
        JobRecord.from_bytes(json.dumps(doc).encode())
    assert field in [".".join(str(p) for p in err["loc"]) for err in info.value.errors()]


def with_history(*moves: tuple[float, JobState], **fields: Any) -> JobRecord:
    """A record whose history is ``moves`` (time, state) after its submit at 100 s."""
    record = stored_record().model_copy(update=fields)
    source = JobState.PENDING
    for time, target in moves:
        record.events.append(JobEvent(time=time, source=source, target=target))
        source = target
    return record


RAN_AND_REQUEUED = ((110.0, JobState.DISPATCHED), (120.0, JobState.RUNNING), (150.0, JobState.PENDING))


@pytest.mark.parametrize(
    ("record", "started", "left"),
    [
        (with_history(*RAN_AND_REQUEUED), 119.5, 150.0),  # back to the queue: its requeue
        (with_history(*RAN_AND_REQUEUED, (160.0, JobState.UNSCHEDULABLE)), 119.5, 150.0),  # a later mark is not it
        (
            with_history(*RAN_AND_REQUEUED, (170.0, JobState.DISPATCHED), (175.0, JobState.RUNNING)),
            119.5,
            150.0,
        ),  # the first run of two, the second still going
        (
            with_history(*RAN_AND_REQUEUED, (170.0, JobState.DISPATCHED), (175.0, JobState.RUNNING)),
            174.0,
            None,
        ),  # the second run: not ended
        (
            with_history(
                *RAN_AND_REQUEUED,
                (170.0, JobState.DISPATCHED),
                (175.0, JobState.RUNNING),
                (300.0, JobState.SUCCEEDED),
                end_time=299.0,
            ),
            174.0,
            299.0,
        ),  # ended: its reported end, not the time the end was written
        (with_history((110.0, JobState.DISPATCHED), (140.0, JobState.FAILED), end_time=140.0), 120.0, None),
        (with_history(), 120.0, None),  # no run in its history
    ],
)
def test_when_a_run_let_go_of_its_cluster_comes_from_the_history(
    record: JobRecord, started: float, left: float | None
) -> None:
    assert record.left_at(started) == left
