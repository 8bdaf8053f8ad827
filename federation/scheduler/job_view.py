"""A stored job as the policy session sees it: the compact ``JobInfo`` the scheduler keeps per job."""

from __future__ import annotations

from federation import capabilities
from federation.models import JobRecord
from policies import JobInfo, TaskInfo
from policies import resources as res
from policies.resources import Resources


def job_info(record: JobRecord) -> JobInfo:
    """The scheduler's compact form of a job; replicas of a task share one resources dict."""
    spec = record.spec
    tasks: list[TaskInfo] = []
    for task in spec.tasks:
        resources = task.resources
        tasks.extend(TaskInfo(record.id, task.name, index, resources) for index in range(task.replicas))
    return JobInfo(
        record.id,
        record.queue,
        record.tenant,
        priority=record.priority,
        submit_time=record.submit_time,
        min_available=spec.min_available or 0,
        preemptible=spec.preemptible,
        walltime=spec.walltime,
        cluster_selector=capabilities.selector(spec),
        tasks=tasks,
        waiting_since=_waiting_since(record),
        spread=spec.placement == "spread",
    )


def _waiting_since(record: JobRecord) -> float | None:
    """A requeued job waits from its requeue, not from its first submit."""
    if record.attempt == 0 or not record.events:
        return None
    return record.events[-1].time


def held_by(info: JobInfo) -> Resources:
    """What a job on a cluster holds: every task (the snapshot shows them all running)."""
    return res.total(t.resources for t in info.tasks)
