"""The Ray backend: each task is a command run by its own named, detached ``TaskRunner`` actor.

- Launch reserves the gang's resources in one detached placement group, each bundle pinned to its
  task's node by the ``ray.io/node-id`` label, and waits (bounded) until all of it is reserved, so a
  gang starts together or not at all. Tasks that request nothing need no reservation and are pinned
  with a hard node affinity instead.
- Actors are named ``fedq-{job}-{epoch}-{task}-{index}`` in the ``fedq`` namespace and outlive the
  agent: a backend in a new process lists them, adopts them and can kill them (fencing after an
  agent restart). A finished run's actor keeps its final state, and its resources, until the backend
  sees it end; then the actor is killed and, once its whole gang is done, the placement group removed.
  After ``poll`` has handed out a run's final status the backend forgets the run, so a long-lived
  agent does not accumulate them; ``tasks`` lists the live runs and the ended, not yet polled ones.
- ``nodes`` reads Ray's public views only (``ray_capacity``): totals from ``ray.nodes()``, use per
  node from the placement groups' bundles, and the cluster's available resources for the rest.

Not thread-safe: the agent calls it from one worker thread.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ray
import ray.cloudpickle
from ray import PlacementGroupID
from ray.exceptions import RayError
from ray.util.placement_group import PlacementGroup, placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy

from member_agent.backends import ray_runner
from member_agent.backends.base import (
    JobRejected,
    LaunchError,
    LogLines,
    NodeView,
    TaskLaunch,
    TaskPhase,
    TaskReport,
)
from member_agent.backends.ray_capacity import node_usage
from member_agent.backends.ray_resources import RayRequest, to_ray
from member_agent.backends.ray_runner import STREAMS, Output, RunInfo, RunState, TaskRunner
from policies.clock import Clock, SystemClock

NAMESPACE = "fedq"
PREFIX = "fedq-"
NODE_ID_LABEL = "ray.io/node-id"
_RPC_TIMEOUT = 10.0

# Ship the runner by value: the cluster's workers need not have fedq installed.
ray.cloudpickle.register_pickle_by_value(ray_runner)
_RemoteRunner = ray.remote(TaskRunner)


def run_name(job_id: str, epoch: int, task_name: str, index: int) -> str:
    """The actor name of one run: unique per (task, epoch), so a run cannot be started twice."""
    return f"{PREFIX}{job_id}-{epoch}-{task_name}-{index}"


@dataclass
class _Run:
    handle: Any
    status: TaskReport
    placement_group: str  # hex id, "" when the run reserved nothing
    wait_ref: Any = None  # the pending ``wait`` call while the run is not finished
    held: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STREAMS, 0))  # output lines read so far

    def output(self, answer: dict[str, Output], ended: bool) -> list[LogLines]:
        """A runner's ``read_logs`` answer as the protocol's ``LogLines``, counted as read."""
        status = self.status
        out = []
        for stream, part in answer.items():
            lines = tuple((float(when), str(text)) for when, text in part["lines"])
            self.held[stream] = part["first"] + len(lines)
            if lines or part["dropped"] or ended:
                batch = (stream, part["first"], lines, part["dropped"], ended)
                out.append(LogLines(status.job_id, status.task_name, status.index, status.epoch, *batch))
        return out


class RayBackend:
    """The ``Backend`` protocol over a real Ray cluster; see the module docstring."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        clock: Clock | None = None,
        log_tail_lines: int = 20,
        launch_timeout: float = 30.0,
        stop_grace: float = 5.0,
        wait_round: float = 60.0,
    ) -> None:
        """``wait_round``: how long one pending ``wait`` call may block in a runner before it is renewed."""
        self._clock = clock or SystemClock()
        self._log_tail_lines = log_tail_lines
        self._launch_timeout = launch_timeout
        self._stop_grace = stop_grace
        self._wait_round = wait_round
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False)
        self._runs: dict[str, _Run] = {}
        self._waiting: dict[Any, str] = {}  # pending ``wait`` ref -> run name
        self._group_members: dict[str, set[str]] = {}  # placement group hex id -> unfinished run names
        self._reaped: set[str] = set()  # runs killed after their end, while Ray may still list their name
        self._events: list[TaskReport] = []
        self._output: list[LogLines] = []  # the last lines of runs that ended, read before their actor went
        self._adopt()
        self._drop_orphan_groups()

    @classmethod
    def from_config(cls, settings: Mapping[str, Any], clock: Clock) -> RayBackend:
        """From the agent config's ``ray`` section, ``{address}``; no address starts or joins a local Ray."""
        cls.check_settings(settings)
        return cls(address=settings.get("address"), clock=clock)

    @staticmethod
    def check_settings(settings: Mapping[str, Any]) -> None:
        """``address``: ``auto``, ``host:port`` of the head's GCS, or ``ray://host:10001`` (Ray Client)."""
        unknown = set(settings) - {"address"}
        if unknown:
            raise ValueError(f"unknown ray backend settings {sorted(unknown)}: only 'address' is accepted")

    def nodes(self) -> list[NodeView]:
        listed = ray.nodes()
        totals, used = node_usage(listed, placement_group_table(), ray.available_resources())
        labels = {node["NodeID"]: node.get("Labels", {}) for node in listed}
        return [
            NodeView(
                name=node_id,
                allocatable=total,
                used={r: min(amount, used[node_id].get(r, 0.0)) for r, amount in total.items()},
                labels={**labels.get(node_id, {}), NODE_ID_LABEL: node_id},
            )
            for node_id, total in totals.items()
        ]

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        requests = self._check_gang(gang)
        reserved = [i for i, request in enumerate(requests) if request.bundle()]
        group: PlacementGroup | None = None
        handles: list[Any] = []
        try:
            if reserved:
                group = self._reserve(gang, requests, reserved)
            bundle_of = {task: bundle for bundle, task in enumerate(reserved)}
            for i, launch in enumerate(gang):
                strategy: Any = (
                    PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=bundle_of[i])
                    if group is not None and i in bundle_of
                    else NodeAffinitySchedulingStrategy(launch.node, soft=False)
                )
                handles.append(self._create_actor(launch, requests[i], strategy, group))
            states: list[RunState] = ray.get([h.status.remote() for h in handles], timeout=self._launch_timeout)
        except (RayError, ValueError) as exc:
            self._undo(handles, group)
            raise LaunchError(f"gang {gang[0].job_id} epoch {gang[0].epoch} did not start: {exc}") from exc
        for handle, state in zip(handles, states, strict=True):
            self._events.append(self._track(handle, state))

    def kill(
        self, job_id: str, epoch: int | None = None, reason: str = "cancelled", tasks: Collection[str] | None = None
    ) -> None:
        self._adopt()
        chosen = None if tasks is None else set(tasks)
        names = [
            name
            for name, run in self._runs.items()
            if run.status.job_id == job_id
            and (epoch is None or run.status.epoch == epoch)
            and (chosen is None or run.status.task_id in chosen)
            and not run.status.phase.terminal
        ]
        stops = {name: self._runs[name].handle.stop.remote(reason) for name in names}
        for name, ref in stops.items():
            try:
                final = status_of(ray.get(ref, timeout=2 * self._stop_grace + _RPC_TIMEOUT))
            except RayError:
                final = replace(self._runs[name].status, phase=TaskPhase.KILLED, reason=reason)
            if final.finished_at is None:
                final = replace(final, finished_at=self._clock.now())
            self._finish(name, final)

    def poll(self) -> list[TaskReport]:
        self._collect_finished()
        events, self._events = self._events, []
        for status in events:
            if status.phase.terminal:
                self._runs.pop(run_name(status.job_id, status.epoch, status.task_name, status.index), None)
        return events

    def tasks(self) -> list[TaskReport]:
        self._adopt()
        self._drop_orphan_groups()
        self._collect_finished()
        return [run.status for run in self._runs.values()]

    def logs(self) -> list[LogLines]:
        """What each live runner printed since the last call (all at once, each call bounded), then the
        last lines of runs that ended."""
        calls = {run.handle.read_logs.remote(dict(run.held)): run for run in self._runs.values() if run.wait_ref}
        out: list[LogLines] = []
        if calls:
            ready, _ = ray.wait(list(calls), num_returns=len(calls), timeout=_RPC_TIMEOUT)
            for ref in ready:
                try:
                    out.extend(calls[ref].output(ray.get(ref), ended=False))
                except RayError:
                    continue  # a runner that cannot answer now: its lines come with a later call
        ended, self._output = self._output, []
        return out + ended

    def close(self) -> None:
        """Disconnect; runs keep going (a restarted agent adopts them). Shuts Ray down only if we started it."""
        self._waiting.clear()
        if self._owns_ray:
            ray.shutdown()

    def _check_gang(self, gang: Sequence[TaskLaunch]) -> list[RayRequest]:
        """Refuse what can never start (unknown node, no command, over the node's size) before reserving."""
        if not gang:
            raise LaunchError("empty gang")
        totals = {node.name: node.allocatable for node in self.nodes()}
        demand: dict[str, dict[str, float]] = defaultdict(dict)
        names: set[str] = set()
        for launch in gang:
            name = run_name(launch.job_id, launch.epoch, launch.task_name, launch.index)
            if name in names or name in self._runs:
                raise LaunchError(f"task {launch.task_id} epoch {launch.epoch} was already launched")
            names.add(name)
            if not launch.command:
                raise JobRejected(f"task {launch.task_name} has no command: the Ray backend runs a task's command")
            if launch.node not in totals:
                raise LaunchError(f"unknown or dead Ray node {launch.node!r} for task {launch.task_id}")
            for resource, amount in launch.resources.items():
                demand[launch.node][resource] = demand[launch.node].get(resource, 0.0) + amount
        for node, request in demand.items():
            too_big = {r: q for r, q in request.items() if q > 0 and q > totals[node].get(r, 0.0) + 1e-9}
            if too_big:
                raise LaunchError(f"gang asks node {node} for {too_big}, more than it has")
        return [to_ray(launch.resources) for launch in gang]

    def _reserve(self, gang: Sequence[TaskLaunch], requests: list[RayRequest], reserved: list[int]) -> PlacementGroup:
        """One placement group for the gang, each bundle on its task's node; removed if not placed in time.
        A spread job's is STRICT_SPREAD (the local scheduler gave each task a node of its own; Ray holds
        the group to it), any other PACK."""
        first = gang[0]
        group: PlacementGroup = placement_group(
            [requests[i].bundle() for i in reserved],
            strategy="STRICT_SPREAD" if first.placement == "spread" else "PACK",
            name=run_name(first.job_id, first.epoch, first.task_name, first.index),
            lifetime="detached",
            bundle_label_selector=[{NODE_ID_LABEL: gang[i].node} for i in reserved],
        )
        ready, _ = ray.wait([group.ready()], timeout=self._launch_timeout)
        if not ready:
            remove_placement_group(group)
            raise LaunchError(
                f"gang {first.job_id} epoch {first.epoch}: resources not free on its nodes "
                f"within {self._launch_timeout:g}s"
            )
        return group

    def _create_actor(
        self, launch: TaskLaunch, request: RayRequest, strategy: Any, group: PlacementGroup | None
    ) -> Any:
        info: RunInfo = {
            "job_id": launch.job_id,
            "task_name": launch.task_name,
            "index": launch.index,
            "epoch": launch.epoch,
            "node": launch.node,
            "placement_group": group.id.hex() if group is not None else "",
        }
        return _RemoteRunner.options(
            name=run_name(launch.job_id, launch.epoch, launch.task_name, launch.index),
            namespace=NAMESPACE,
            lifetime="detached",
            max_concurrency=8,
            max_restarts=0,
            num_cpus=request.num_cpus,
            num_gpus=request.num_gpus,
            memory=request.memory or None,
            resources=request.custom,
            scheduling_strategy=strategy,
            runtime_env=launch.runtime_env,
        ).remote(
            info,
            list(launch.command),
            dict(launch.env),
            launch.walltime,
            self._log_tail_lines,
            self._stop_grace,
            launch.log_limit,
        )

    def _undo(self, handles: list[Any], group: PlacementGroup | None) -> None:
        """Stop whatever of a failed launch did start, then drop its actors and its reservation."""
        stops = [handle.stop.remote("launch failed") for handle in handles]
        if stops:
            ray.wait(stops, num_returns=len(stops), timeout=self._stop_grace + _RPC_TIMEOUT)
        for handle in handles:
            ray.kill(handle, no_restart=True)
        if group is not None:
            remove_placement_group(group)

    def _track(self, handle: Any, state: RunState) -> TaskReport:
        """Start watching a run: one pending ``wait`` call that resolves when its process ends."""
        info = state["info"]
        name = run_name(info["job_id"], info["epoch"], info["task_name"], info["index"])
        status = status_of(state)
        if status.phase.terminal:
            # Ended before we looked (a short command, a busy machine): report the start now and let the
            # end come through the wait below, which also frees the actor and its placement group.
            status = replace(status, phase=TaskPhase.RUNNING, exit_code=None, reason="", log_tail="", finished_at=None)
        run = _Run(handle, status, info["placement_group"])
        self._runs[name] = run
        self._watch(name, run)
        if run.placement_group:
            self._group_members.setdefault(run.placement_group, set()).add(name)
        return run.status

    def _watch(self, name: str, run: _Run) -> None:
        run.wait_ref = run.handle.wait.remote(self._wait_round)
        self._waiting[run.wait_ref] = name

    def _collect_finished(self) -> None:
        """Without blocking, finish every run whose process has ended, in the order they ended."""
        if not self._waiting:
            return
        ready, _ = ray.wait(list(self._waiting), num_returns=len(self._waiting), timeout=0)
        finished = []
        for ref in ready:
            name = self._waiting.pop(ref)
            if name not in self._runs:
                continue  # a late answer for a run already reported and forgotten
            status = self._answer(ref, name)
            if status.phase.terminal:
                finished.append((name, status))
            else:
                self._watch(name, self._runs[name])
        for name, status in sorted(finished, key=lambda item: item[1].finished_at or 0.0):
            self._finish(name, status)

    def _answer(self, ref: Any, name: str) -> TaskReport:
        """What a ``wait`` call says; an actor that died under its run means the run is lost."""
        try:
            return status_of(ray.get(ref))
        except RayError as exc:
            return replace(
                self._runs[name].status,
                phase=TaskPhase.FAILED,
                reason=f"lost: the task's Ray actor died ({type(exc).__name__})",
                finished_at=self._clock.now(),
            )

    def _finish(self, name: str, status: TaskReport) -> None:
        """Record a run's final status, then free what it held: its actor and, once the gang is done, the group."""
        run = self._runs[name]
        run.status = status
        self._events.append(status)
        if run.wait_ref is not None:
            self._waiting.pop(run.wait_ref, None)
            run.wait_ref = None
        try:
            last: dict[str, Output] = ray.get(run.handle.read_logs.remote(dict(run.held)), timeout=_RPC_TIMEOUT)
        except RayError:
            last = {
                stream: {"first": held, "lines": [], "dropped": 0, "ended": True} for stream, held in run.held.items()
            }
        self._output.extend(run.output(last, ended=True))
        ray.kill(run.handle, no_restart=True)
        self._reaped.add(name)
        members = self._group_members.get(run.placement_group)
        if members is not None:
            members.discard(name)
            if not members:
                del self._group_members[run.placement_group]
                remove_placement_group(PlacementGroup(PlacementGroupID.from_hex(run.placement_group)))

    def _adopt(self) -> None:
        """Take over the runs in Ray this instance does not know: started by an earlier agent process."""
        listed = {
            entry["name"]
            for entry in ray.util.list_named_actors(all_namespaces=True)
            if entry["namespace"] == NAMESPACE and entry["name"].startswith(PREFIX)
        }
        self._reaped &= listed
        handles = []
        for name in listed - self._runs.keys() - self._reaped:
            try:
                handles.append(ray.get_actor(name, namespace=NAMESPACE))
            except ValueError:
                continue  # gone since it was listed
        for handle, state in _statuses(handles):
            self._track(handle, state)

    def _drop_orphan_groups(self) -> None:
        """Remove fedq reservations no run holds: left by an agent that died between reserving and starting."""
        for group_id, entry in placement_group_table().items():
            if entry["name"].startswith(PREFIX) and entry["state"] != "REMOVED" and group_id not in self._group_members:
                remove_placement_group(PlacementGroup(PlacementGroupID.from_hex(group_id)))


def status_of(state: RunState) -> TaskReport:
    """A runner's plain-dict state as the protocol's ``TaskReport``."""
    info = state["info"]
    return TaskReport(
        job_id=info["job_id"],
        task_name=info["task_name"],
        index=info["index"],
        epoch=info["epoch"],
        phase=TaskPhase(state["phase"]),
        node=info["node"],
        exit_code=state["exit_code"],
        reason=state["reason"],
        log_tail=state["log_tail"],
        started_at=state["started_at"],
        finished_at=state["finished_at"],
    )


def _statuses(handles: Iterable[Any]) -> list[tuple[Any, RunState]]:
    """Ask every runner for its state at once; keep the answers that came back in time, without error."""
    calls = {handle.status.remote(): handle for handle in handles}
    if not calls:
        return []
    ready, _ = ray.wait(list(calls), num_returns=len(calls), timeout=_RPC_TIMEOUT)
    answers = []
    for ref in ready:
        try:
            answers.append((calls[ref], ray.get(ref)))
        except RayError:
            continue
    return answers
