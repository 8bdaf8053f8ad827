"""The agents' own records of their runs, and the checks the chaos tests make of them.

``RecordingBackend`` is a simulated backend that notes each task run's launch and stop (its end, a kill
or the fencing) on the agent's own clock; runs of one job on any cluster must never overlap in time."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from member_agent.backends.base import NodeView, TaskLaunch, TaskReport
from member_agent.backends.simulated import SimulatedBackend
from policies.clock import Clock
from tests.e2e.cluster import Federation

# A short lease and requeue: an agent unheard for 2 s fences its runs, the federation requeues at 4 s.
FENCING = {"cyclePeriod": "200ms", "cluster": {"lostAfter": "2s", "requeueAfter": "4s"}}
TERMINAL = {"Succeeded", "Failed", "Cancelled"}


@dataclass
class Run:
    cluster: str
    job_id: str
    epoch: int
    task: str
    start: float
    stop: float | None = None


class RecordingBackend(SimulatedBackend):
    def __init__(self, cluster: str, nodes: Sequence[NodeView], clock: Clock) -> None:
        super().__init__(nodes, clock)
        self.cluster = cluster
        self.runs: dict[tuple[str, int], Run] = {}
        self._lock = threading.Lock()  # the agent's thread writes, the test's reads

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        super().launch(gang)
        now = self._clock.now()
        with self._lock:
            for task in gang:
                self.runs[(task.task_id, task.epoch)] = Run(self.cluster, task.job_id, task.epoch, task.task_id, now)

    def poll(self) -> list[TaskReport]:
        statuses = super().poll()
        with self._lock:
            for status in statuses:
                run = self.runs.get((status.task_id, status.epoch))
                if run is not None and status.phase.terminal and run.stop is None:
                    run.stop = status.finished_at if status.finished_at is not None else self._clock.now()
        return statuses

    def records(self) -> list[Run]:
        with self._lock:
            return [Run(**vars(run)) for run in self.runs.values()]


def assert_no_overlap(runs: Iterable[Run], now: float) -> None:
    """No two runs of one task (any epoch, any cluster) were alive at once; a run not stopped yet
    counts as alive until ``now``."""
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        by_task.setdefault(run.task, []).append(run)
    for task, task_runs in by_task.items():
        task_runs.sort(key=lambda r: r.start)
        for before, after in zip(task_runs, task_runs[1:], strict=False):
            ended = before.stop if before.stop is not None else now
            assert ended <= after.start, f"{task}: {before} still ran when {after} started"


def running_on(fed: Federation, job_id: str, cluster: str) -> bool:
    record = fed.admin.job(job_id)
    return bool(record["state"] == "Running" and record["cluster"] == cluster)
