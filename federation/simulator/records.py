"""The per-job result of a simulation: what the metrics, the CSV/JSON writers and the plots read.

Times are seconds from the scenario start. A record carries its own resource totals (summed over all
of the job's tasks), so metrics never need the scheduler's models to know what a job occupied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from federation.lifecycle import JobEvent
from federation.models import JobRecord
from federation.simulator.scenario import Scenario, SimJob

RunKey = tuple[str, int, str, float | None, float | None, str]
"""Task runs that went together: (job id, epoch, task name, start, end, final phase)."""

STATES: Final = ("Succeeded", "Failed", "Rejected", "Unschedulable", "Cancelled")
# States whose jobs ran to their end (a Failed job may have been killed at its walltime): the
# population of slowdown statistics.
COMPLETED_STATES: Final = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One job's outcome. ``start``/``end`` are None for jobs that never ran (Rejected, Unschedulable)."""

    id: str
    tenant: str
    queue: str
    submit: float
    state: str
    resources: dict[str, float] = field(default_factory=dict)  # totals across tasks, e.g. {"cpu": 4}
    cluster: str = ""
    start: float | None = None
    end: float | None = None
    used: dict[str, float] | None = None
    """Resource-seconds its last run's tasks held (tasks.csv), when known: an elastic job's tasks start
    as room allows, so ``resources`` times the run's length would overstate it."""

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"job {self.id}: state {self.state!r} is not one of {', '.join(STATES)}")
        if self.start is None and self.end is not None:
            raise ValueError(f"job {self.id}: an end without a start")
        if self.start is not None and self.start < self.submit:
            raise ValueError(f"job {self.id}: starts at {self.start} before its submit at {self.submit}")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"job {self.id}: ends at {self.end} before its start at {self.start}")

    @property
    def wait(self) -> float | None:
        """Seconds from submit to start; None for a job that never started."""
        return None if self.start is None else self.start - self.submit

    @property
    def runtime(self) -> float | None:
        """Seconds the job actually ran (end - start); None unless it both started and ended."""
        return None if self.start is None or self.end is None else self.end - self.start

    def resource_seconds(self) -> dict[str, float]:
        """What its last run held over its length: its task runs' when known, else every task throughout."""
        if self.used is not None:
            return self.used
        run = self.runtime or 0.0
        return {name: amount * run for name, amount in self.resources.items()}

    @property
    def completed(self) -> bool:
        """Ran to its end, successfully or not: the jobs slowdown is measured over."""
        return self.state in COMPLETED_STATES and self.runtime is not None


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """Runs of a job's tasks that started and ended together (tasks.csv): an elastic job's tasks beyond
    its gang start as room allows, so its runs show its split. ``indexes``: the tasks' indexes as
    sorted ranges (first, last)."""

    id: str  # the job's scenario id
    epoch: int
    cluster: str
    task: str
    indexes: tuple[tuple[int, int], ...]
    start: float | None
    end: float | None
    state: str  # the tasks' final phase: Succeeded, Failed or Killed

    @property
    def count(self) -> int:
        return sum(last - first + 1 for first, last in self.indexes)


@dataclass
class EngineStats:
    event_times: int = 0
    rounds: int = 0
    global_cycles: int = 0
    idle_cycles: int = 0  # global cycles skipped: nothing could start, be reclaimed or be marked
    local_cycles: int = 0
    global_seconds: float = 0.0
    local_seconds: float = 0.0
    wall_seconds: float = 0.0


@dataclass
class SimulationResult:
    records: list[JobOutcome]
    capacity: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)  # job id -> why it was Rejected/Unschedulable/Failed
    stats: EngineStats = field(default_factory=EngineStats)
    events: dict[str, list[JobEvent]] = field(default_factory=dict)  # job id -> its history, as the store keeps it
    tasks: list[TaskOutcome] = field(default_factory=list)  # every task run that ended, jobs in file order


@dataclass(slots=True)
class JobProgress:
    """A submitted job in a run: its federation record (replaced at each lifecycle move; its start, end
    and cluster are the output's) and its outcome in the output (``state``, set once it is done)."""

    sim: SimJob
    record: JobRecord
    revision: int = 0
    state: str = ""
    reason: str = ""


def result_of(
    scenario: Scenario,
    jobs: list[JobProgress],
    stats: EngineStats,
    runs: Mapping[str, Mapping[RunKey, Sequence[Sequence[int]]]] | None = None,
) -> SimulationResult:
    """The run's outcome, job by job in file order (``jobs`` in the scenario's order); ``runs``: each
    cluster's ended task runs (``RecordingBackend.ended``, under the engine's job ids)."""
    out: list[JobOutcome] = []
    reasons: dict[str, str] = {}
    events: dict[str, list[JobEvent]] = {}
    tasks = task_outcomes(scenario, jobs, runs or {})
    held = _held(scenario, jobs, tasks)
    for sim, job in zip(scenario.jobs, jobs, strict=True):
        resources = sim.spec.total_resources()
        record = job.record
        start = record.start_time  # its last run's: a requeue clears it
        ran_on, end = (record.cluster, record.end_time) if start is not None else ("", None)
        used = held.get(sim.id) if end is not None else None
        out.append(
            JobOutcome(sim.id, sim.tenant, sim.spec.queue, sim.submit, job.state, resources, ran_on, start, end, used)
        )
        if job.reason:
            reasons[sim.id] = job.reason
        events[sim.id] = job.record.events
    capacity: dict[str, float] = {}
    for cluster in scenario.clusters:
        for node in cluster.nodes:
            for name, amount in node.allocatable.items():
                capacity[name] = capacity.get(name, 0.0) + amount
    return SimulationResult(out, capacity, reasons, stats, events, tasks)


def _held(scenario: Scenario, jobs: list[JobProgress], tasks: list[TaskOutcome]) -> dict[str, dict[str, float]]:
    """Each job's resource-seconds over its last run (its record's epoch), from its task runs."""
    epochs = {sim.id: job.record.epoch for sim, job in zip(scenario.jobs, jobs, strict=True)}
    sizes = {sim.id: {task.name: task.resources for task in sim.spec.tasks} for sim in scenario.jobs}
    held: dict[str, dict[str, float]] = {}
    for run in tasks:
        if run.epoch != epochs.get(run.id) or run.start is None or run.end is None:
            continue
        total = held.setdefault(run.id, {})
        for name, amount in sizes[run.id].get(run.task, {}).items():
            total[name] = total.get(name, 0.0) + amount * run.count * (run.end - run.start)
    return held


def task_outcomes(
    scenario: Scenario, jobs: list[JobProgress], runs: Mapping[str, Mapping[RunKey, Sequence[Sequence[int]]]]
) -> list[TaskOutcome]:
    """Every ended task run, by job in file order, then epoch, start, end, task name and first index."""
    order = {job.record.id: (n, sim.id) for n, (sim, job) in enumerate(zip(scenario.jobs, jobs, strict=True))}
    found = []
    for cluster, ended in runs.items():
        for (job_id, epoch, task, start, end, state), ranges in ended.items():
            known = order.get(job_id)
            if known is None:
                continue
            indexes = _merged(ranges)
            outcome = TaskOutcome(known[1], epoch, cluster, task, indexes, start, end, state)
            sort_key = (known[0], epoch, start or 0.0, end or 0.0, task, indexes[0][0])
            found.append((sort_key, outcome))
    found.sort(key=lambda item: item[0])
    return [outcome for _, outcome in found]


def _merged(ranges: Sequence[Sequence[int]]) -> tuple[tuple[int, int], ...]:
    """Index ranges sorted, touching ones joined."""
    out: list[tuple[int, int]] = []
    for first, last in sorted((r[0], r[1]) for r in ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)
