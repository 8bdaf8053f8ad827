"""A cluster that exists only in memory: tasks "run" for their given runtime on the injected clock.

The simulator drives tens of thousands of jobs through this backend, so every operation is
incremental: per-node usage is updated on start and end, and running tasks sit in a heap of end
times (killed entries are dropped lazily when they reach the top), so advancing the clock costs
only the tasks that actually end. Once ``poll`` has handed out a run's final status the backend
forgets the run (as the Ray backend does), so memory follows the running tasks, not the history.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from federation.models.resources import parse_resources
from member_agent.backends.base import LaunchError, LogLines, NodeView, TaskLaunch, TaskPhase, TaskReport
from policies.clock import Clock
from policies.units import parse_duration

DEFAULT_RUNTIME = 60.0
_GROUP_KEYS = frozenset({"count", "resources", "labels", "namePrefix", "unschedulable", "taints"})
_CONFIG_KEYS = frozenset({"nodes", "defaultRuntime"})

RunKey = tuple[str, int]  # (task id, epoch): one run of one task
EXIT_CODE = "FEDQ_SIM_EXIT_CODE"
"""A task env variable: a run whose value is a non-zero number fails with that exit code at its runtime's end."""
SYNTHETIC = {"stdout": ("FEDQ_SIM_STDOUT_LINES", 2), "stderr": ("FEDQ_SIM_STDERR_LINES", 0)}
"""A run's synthetic output: per stream, the task env variable that says how many lines, and the default."""
MAX_SYNTHETIC = 1_000_000


def synthetic_count(env: Mapping[str, str], stream: str) -> int:
    name, default = SYNTHETIC[stream]
    value = env.get(name, "")
    return min(int(value), MAX_SYNTHETIC) if value.isdigit() else default


class _Node:
    """Mutable per-node bookkeeping; ``used`` only ever changes by the amount a task starts or frees.

    The last ``NodeView`` handed out is kept until usage changes, so listing a mostly idle cluster
    every cycle does not rebuild every node.
    """

    __slots__ = ("view", "position", "used", "_snapshot")

    def __init__(self, view: NodeView, position: int) -> None:
        self.view = view
        self.position = position  # in the backend's listing
        self.used: dict[str, float] = {r: view.used.get(r, 0.0) for r in view.allocatable}
        self._snapshot: NodeView | None = None

    def snapshot(self) -> NodeView:
        if self._snapshot is None:
            view = self.view  # built field by field: dataclasses.replace introspects the class every call
            self._snapshot = NodeView(
                view.name, view.allocatable, dict(self.used), view.labels, view.unschedulable, view.taints
            )
        return self._snapshot

    def fits(self, demand: Mapping[str, float]) -> bool:
        alloc = self.view.allocatable
        used = self.used
        for name, amount in demand.items():
            if amount <= 0:
                continue
            cap = alloc.get(name, 0.0)
            if used.get(name, 0.0) + amount > cap + 1e-9 * max(1.0, cap):
                return False
        return True

    def take(self, request: Mapping[str, float], sign: float) -> bool:
        """Change the usage; True when this is the first change since the node's last snapshot."""
        first = self._snapshot is not None
        self._snapshot = None
        used = self.used
        for name, amount in request.items():
            if amount > 0:
                used[name] = used.get(name, 0.0) + sign * amount
        return first


class _Run:
    __slots__ = ("launch", "status", "end", "over_walltime", "exit_code", "active", "printed")

    def __init__(self, launch: TaskLaunch, status: TaskReport, end: float, over_walltime: bool) -> None:
        self.launch = launch
        self.status = status
        self.end = end
        self.over_walltime = over_walltime
        code = launch.env.get(EXIT_CODE, "0") if launch.env else "0"
        self.exit_code = int(code) if code.isdigit() else 0
        self.active = True
        self.printed = {stream: 0 for stream in SYNTHETIC}  # lines handed out by ``logs``

    def output(self, now: float) -> list[LogLines]:
        """Its synthetic lines due by ``now`` (or its end): line k of n printed k/n of its way through."""
        launch, status = self.launch, self.status
        start = status.started_at or now
        until = min(now, status.finished_at) if status.finished_at is not None else now
        span = max(self.end - start, 1e-9)
        out = []
        for stream, printed in self.printed.items():
            total = synthetic_count(launch.env, stream)
            due = [k for k in range(printed, total) if start + span * (k + 1) / total <= until]
            ended = status.phase.terminal
            if due or ended:
                lines = tuple(
                    (start + span * (k + 1) / total, f"{launch.task_id} {stream} line {k + 1}/{total}") for k in due
                )
                out.append(
                    LogLines(
                        launch.job_id, launch.task_name, launch.index, launch.epoch, stream, printed, lines, 0, ended
                    )
                )
                self.printed[stream] = printed + len(due)
        return out


class SimulatedBackend:
    """The ``Backend`` protocol over virtual nodes and virtual time; see the module docstring."""

    name = "simulated"

    def __init__(self, nodes: Sequence[NodeView], clock: Clock, default_runtime: float = DEFAULT_RUNTIME) -> None:
        self._clock = clock
        self._default_runtime = default_runtime
        self._nodes: dict[str, _Node] = {}
        for view in nodes:
            if view.name in self._nodes:
                raise ValueError(f"duplicate node name {view.name!r}")
            self._nodes[view.name] = _Node(view, len(self._nodes))
        self._listing = [node.snapshot() for node in self._nodes.values()]  # what ``nodes`` hands out
        self._changed: list[_Node] = []  # nodes whose usage changed since the listing was brought up to date
        self._runs: dict[RunKey, _Run] = {}
        self._active_by_job: dict[str, set[RunKey]] = {}
        self._ends: list[tuple[float, int, _Run]] = []  # (end, launch order, run); ties never reach the run
        self._seq = 0
        self._events: list[TaskReport] = []
        self._printing: dict[RunKey, _Run] = {}  # runs launched with a log limit: their output is asked for

    @classmethod
    def from_config(cls, config: Mapping[str, Any], clock: Clock) -> SimulatedBackend:
        """Build from ``{nodes: [{count, resources, labels, namePrefix, ...}], defaultRuntime}``."""
        unknown = set(config) - _CONFIG_KEYS
        if unknown:
            raise ValueError(f"unknown simulated backend keys {sorted(unknown)}; expected {sorted(_CONFIG_KEYS)}")
        default_runtime = parse_duration(config.get("defaultRuntime", DEFAULT_RUNTIME))
        return cls(nodes_from_groups(config.get("nodes", [])), clock, default_runtime=default_runtime)

    def nodes(self) -> list[NodeView]:
        """Snapshots shared between calls until the node's usage changes: read them, never mutate them.
        Only the nodes a start or an end changed get a new one."""
        self.advance()
        listing = self._listing
        for node in self._changed:
            listing[node.position] = node.snapshot()
        self._changed.clear()
        return list(listing)

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        self.advance()
        demand = self._check_gang(gang)
        for node_name, request in demand.items():
            if not self._nodes[node_name].fits(request):
                raise LaunchError(f"gang of {len(gang)} does not fit on node {node_name!r}")
        now = self._clock.now()
        for launch in gang:
            self._start(launch, now)

    def kill(
        self, job_id: str, epoch: int | None = None, reason: str = "cancelled", tasks: Collection[str] | None = None
    ) -> None:
        self.advance()
        keys = self._active_by_job.get(job_id)
        if not keys:
            return
        now = self._clock.now()
        chosen = None if tasks is None else set(tasks)
        for key in [k for k in keys if (epoch is None or k[1] == epoch) and (chosen is None or k[0] in chosen)]:
            self._finish(self._runs[key], TaskPhase.KILLED, now, reason=reason)

    def poll(self) -> list[TaskReport]:
        self.advance()
        events, self._events = self._events, []
        for status in events:
            if status.phase.terminal:
                self._runs.pop((status.task_id, status.epoch), None)
        return events

    def tasks(self) -> list[TaskReport]:
        """Running tasks and those that ended since the last ``poll``."""
        self.advance()
        return [run.status for run in self._runs.values()]

    def logs(self) -> list[LogLines]:
        """Synthetic lines (``SYNTHETIC``) of the runs launched with a ``log_limit`` (an agent whose
        federation takes output): the simulator's runs print nothing and cost nothing."""
        self.advance()
        now = self._clock.now()
        out = []
        for key, run in list(self._printing.items()):
            out.extend(run.output(now))
            if run.status.phase.terminal:
                del self._printing[key]
        return out

    def close(self) -> None:
        """Nothing to release: the cluster is only memory."""

    def advance(self) -> None:
        """End every task whose end time is at or before the clock's now, in end-time order."""
        now = self._clock.now()
        ends = self._ends
        while ends and ends[0][0] <= now:
            end, _, run = heapq.heappop(ends)
            if not run.active:
                continue
            if run.over_walltime:
                self._finish(run, TaskPhase.KILLED, end, reason="walltime")
            elif run.exit_code:
                self._finish(run, TaskPhase.FAILED, end, reason=f"exit code {run.exit_code}", exit_code=run.exit_code)
            else:
                self._finish(run, TaskPhase.SUCCEEDED, end, exit_code=0)

    def next_event_time(self) -> float | None:
        """When the earliest running task ends: where the simulator can jump its clock to."""
        ends = self._ends
        while ends and not ends[0][2].active:
            heapq.heappop(ends)
        return ends[0][0] if ends else None

    def _check_gang(self, gang: Sequence[TaskLaunch]) -> dict[str, dict[str, float]]:
        """Validate the gang and total its request per node; raises before anything starts."""
        demand: dict[str, dict[str, float]] = {}
        seen: set[RunKey] = set()
        for launch in gang:
            key = (launch.task_id, launch.epoch)
            if key in seen or key in self._runs:
                raise LaunchError(f"task {launch.task_id} epoch {launch.epoch} was already launched")
            seen.add(key)
            if (launch.runtime or 0.0) < 0 or (launch.walltime or 0.0) < 0:
                raise LaunchError(f"task {launch.task_id}: runtime and walltime must not be negative")
            if launch.node not in self._nodes:
                raise LaunchError(f"unknown node {launch.node!r} for task {launch.task_id}")
            per_node = demand.setdefault(launch.node, {})
            for name, amount in launch.resources.items():
                per_node[name] = per_node.get(name, 0.0) + amount
        return demand

    def _start(self, launch: TaskLaunch, now: float) -> None:
        runtime = launch.runtime if launch.runtime is not None else launch.walltime
        if runtime is None:
            runtime = self._default_runtime
        over_walltime = launch.walltime is not None and runtime > launch.walltime
        end = now + (launch.walltime if over_walltime and launch.walltime is not None else runtime)
        key = (launch.task_id, launch.epoch)
        status = TaskReport(
            job_id=launch.job_id,
            task_name=launch.task_name,
            index=launch.index,
            epoch=launch.epoch,
            phase=TaskPhase.RUNNING,
            node=launch.node,
            started_at=now,
        )
        run = _Run(launch, status, end, over_walltime)
        self._runs[key] = run
        if launch.log_limit is not None:
            self._printing[key] = run
        self._active_by_job.setdefault(launch.job_id, set()).add(key)
        self._use(launch, 1.0)
        self._seq += 1
        heapq.heappush(self._ends, (end, self._seq, run))
        self._events.append(status)

    def _use(self, launch: TaskLaunch, sign: float) -> None:
        """The task's resources taken (+1) on its node or given back (-1)."""
        node = self._nodes[launch.node]
        if node.take(launch.resources, sign):  # once per node until the listing is brought up to date
            self._changed.append(node)

    def _finish(
        self, run: _Run, phase: TaskPhase, at: float, *, reason: str = "", exit_code: int | None = None
    ) -> None:
        run.active = False
        launch = run.launch
        key = (launch.task_id, launch.epoch)
        job_keys = self._active_by_job[launch.job_id]
        job_keys.discard(key)
        if not job_keys:
            del self._active_by_job[launch.job_id]
        self._use(launch, -1.0)
        started = run.status
        run.status = TaskReport(
            started.job_id,
            started.task_name,
            started.index,
            started.epoch,
            phase,
            started.node,
            exit_code,
            reason,
            started.log_tail,
            started.started_at,
            at,
        )
        self._events.append(run.status)


def nodes_from_groups(groups: Sequence[Mapping[str, Any]]) -> list[NodeView]:
    """Expand node groups (``count`` nodes of one shape each) into named nodes.

    Names are ``{namePrefix}-{i}``, numbered on across groups that share a prefix (default "node").
    """
    if not isinstance(groups, Sequence) or isinstance(groups, str):
        raise ValueError("nodes must be a list of node groups like {count: 4, resources: {cpu: 8}}")
    numbering: dict[str, int] = {}
    views: list[NodeView] = []
    for position, group in enumerate(groups):
        if not isinstance(group, Mapping):
            raise ValueError(f"node group {position} must be a mapping, not {type(group).__name__}")
        unknown = set(group) - _GROUP_KEYS
        if unknown:
            raise ValueError(f"node group {position}: unknown keys {sorted(unknown)}; expected {sorted(_GROUP_KEYS)}")
        count = group.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"node group {position}: count must be a whole number >= 0, not {count!r}")
        try:
            resources = parse_resources(group.get("resources"))
        except ValueError as exc:
            raise ValueError(f"node group {position}: {exc}") from None
        labels = {str(k): str(v) for k, v in (group.get("labels") or {}).items()}
        prefix = str(group.get("namePrefix", "node"))
        taints = tuple(str(t) for t in group.get("taints") or ())
        first = numbering.get(prefix, 0)
        numbering[prefix] = first + count
        views.extend(
            NodeView(
                name=f"{prefix}-{i}",
                allocatable=dict(resources),
                labels=dict(labels),
                unschedulable=bool(group.get("unschedulable", False)),
                taints=taints,
            )
            for i in range(first, first + count)
        )
    return views
