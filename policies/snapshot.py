"""The snapshot a session works on: jobs, tasks, nodes (or clusters), queues and usage.

Plain slotted dataclasses: the global level keeps 100,000 pending jobs in memory, so each object
is compact and carries no derived state; sessions keep their own counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING

from policies import resources as res
from policies.resources import Resources

if TYPE_CHECKING:
    from policies.framework.placement import NodeEvaluations
    from policies.framework.totals import JobTotals
    from policies.ordering import PendingIndex
    from policies.profile import Releases

ROOT = ""


class TaskStatus(StrEnum):
    """Volcano's task states."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


#: States whose resources are held on a node (Volcano's AllocatedStatus plus Releasing).
OCCUPYING = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING}
)
#: States that count towards a gang being ready (Volcano's ReadyTaskNum).
READY = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED}
)
#: States a victim may be evicted from.
EVICTABLE = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})


@dataclass(slots=True, eq=False)
class TaskInfo:
    job: str
    name: str
    index: int
    resources: Resources
    status: TaskStatus = TaskStatus.PENDING
    node: str = ""
    expected_end: float | None = None  # running tasks: start + walltime, for the backfill profile
    start_time: float | None = None

    @property
    def uid(self) -> str:
        return f"{self.job}/{self.name}-{self.index}"


@dataclass(slots=True, eq=False)
class JobInfo:
    id: str
    queue: str  # leaf queue path, e.g. "research.vision"
    tenant: str = ""
    priority: int = 0
    submit_time: float = 0.0
    min_available: int = 0  # 0 = all tasks (a full gang)
    preemptible: bool = True
    walltime: float | None = None
    cluster_selector: dict[str, str] = field(default_factory=dict)
    tasks: list[TaskInfo] = field(default_factory=list)
    start_time: float | None = None
    waiting_since: float | None = None  # None = submit_time; reset when a job is requeued
    spread: bool = False  # one task per node (spec.placement: spread); otherwise packed

    @property
    def gang_size(self) -> int:
        return self.min_available or len(self.tasks)

    @property
    def waiting_from(self) -> float:
        return self.submit_time if self.waiting_since is None else self.waiting_since

    def request(self) -> Resources:
        """Resources of the tasks not yet placed."""
        return res.total(t.resources for t in self.tasks if t.status == TaskStatus.PENDING)

    def min_gang(self) -> list[TaskInfo]:
        """The tasks of the smallest gang: the job cannot start with fewer."""
        return sorted(self.tasks, key=lambda t: t.index)[: self.gang_size]

    def min_request(self) -> Resources:
        """Resources of the smallest gang: what must be free for the job to start at all."""
        return res.total(t.resources for t in self.min_gang())

    def gang_runs(self) -> list[tuple[Resources, int]]:
        """The smallest gang as (resources, count) per task shape (replicas share one dict): what
        ``NodeInfo.packs`` and ``could_hold`` take."""
        counts: dict[int, tuple[Resources, int]] = {}
        for task in self.min_gang():
            known = counts.get(id(task.resources))
            counts[id(task.resources)] = (task.resources, 1 if known is None else known[1] + 1)
        return list(counts.values())


@dataclass(slots=True, eq=False)
class NodeShape:
    """``count`` nodes of a cluster, each with ``allocatable`` and ``idle`` resources."""

    allocatable: Resources
    idle: Resources
    count: int


@dataclass(slots=True, eq=False)
class NodeInfo:
    """A node, or (with ``shapes``) a whole member cluster summarised by node shape.

    For a cluster ``fits(req)`` means "some node of the cluster can hold it", and taking resources
    takes them from one node of the best-fitting shape, so tasks of a gang are packed node by node.
    """

    name: str
    allocatable: Resources
    idle: Resources = field(default_factory=dict)
    used: Resources = field(default_factory=dict)
    releasing: Resources = field(default_factory=dict)
    pipelined: Resources = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    shapes: list[NodeShape] | None = None

    def __post_init__(self) -> None:
        if self.shapes is not None:
            self.allocatable = res.total(res.scale(s.allocatable, s.count) for s in self.shapes)
            self.idle = res.total(res.scale(s.idle, s.count) for s in self.shapes)
            self.used = res.sub(self.allocatable, self.idle)
        elif not self.idle:
            self.idle = res.sub(self.allocatable, self.used)

    def clone(self) -> NodeInfo:
        shapes = None if self.shapes is None else [NodeShape(s.allocatable, dict(s.idle), s.count) for s in self.shapes]
        node = NodeInfo(
            self.name,
            dict(self.allocatable),
            dict(self.idle),
            dict(self.used),
            dict(self.releasing),
            dict(self.pipelined),
            self.labels,
            self.unschedulable,
            None,
        )
        node.shapes = shapes
        return node

    def restore(self, saved: NodeInfo) -> None:
        """Take back the state of ``saved``, a ``clone`` of this node made before it changed."""
        self.idle, self.used, self.releasing, self.pipelined = saved.idle, saved.used, saved.releasing, saved.pipelined
        self.shapes = saved.shapes

    def fits(self, req: Resources) -> bool:
        """Fits what is idle now, net of work pipelined here beyond what is being released."""
        if self.pipelined and not self.fits_future(req):
            return False
        if self.shapes is None:
            return res.fits(req, self.idle)
        return res.fits(req, self.idle) and any(s.count > 0 and res.fits(req, s.idle) for s in self.shapes)

    def packs(self, reqs: Sequence[tuple[Resources, int]], spread: bool = False) -> bool:
        """Whether ``count`` copies of each request fit at once (on a cluster: each on some node,
        packed best-fit in order of size as ``take`` would; ``spread``: each on a node of its own),
        without changing anything.

        The one-by-one best fit puts the next copy of a request on the node the previous copy left
        smallest as long as it still fits there, so a node is filled with as many copies as it takes
        before the next is chosen, and nodes of one shape fill alike: this walks nodes, not copies.
        """
        need: Resources = {}
        for req, count in reqs:
            res.iadd(need, req, count)
        if not res.fits(need, self.idle):
            return False
        if self.shapes is None:
            return not spread or sum(count for _, count in reqs) <= 1
        free = [(dict(s.idle), s.count) for s in self.shapes if s.count > 0]
        for req, count in sorted(reqs, key=lambda rc: -sum(rc[0].values())):
            while count > 0:
                best = min(
                    (i for i, (idle, n) in enumerate(free) if n > 0 and res.fits(req, idle)),
                    key=lambda i: sum(free[i][0].values()),
                    default=-1,
                )
                if best < 0:
                    return False
                idle, n = free[best]
                left = res.sub(idle, req)
                per_node = 1
                # A request of no size leaves the node as roomy as others: one copy at a time, as take does.
                if sum(req.values()) > 0 and not spread:
                    while per_node < count and res.fits(req, left):
                        left = res.sub(left, req)
                        per_node += 1
                nodes = min(n, count // per_node)
                free[best] = (idle, n - nodes)
                if not spread:  # spread: a node that took a task of the job takes no other
                    free.append((left, nodes))
                count -= nodes * per_node
        return True

    def could_hold(self, reqs: Sequence[tuple[Resources, int]], spread: bool = False) -> bool:
        """Whether the node (or cluster) could ever hold these at once: ``packs`` on it empty. On a
        cluster this is judged node by node, never on the total, as its member session places them.

        The answer depends only on the node sizes and the request, so it is remembered by those
        (``_could_hold``): a backlog asks it of job after job, and every cycle asks again."""
        return _could_hold(self.sizes(), tuple((tuple(sorted(r.items())), n) for r, n in reqs), spread)

    def sizes(self) -> Sizes:
        """What this node (or cluster) could ever hold, as a key: a node's allocatable, or a cluster's
        node sizes with how many nodes of each (in the order of its shapes)."""
        if self.shapes is None:
            return tuple(sorted(self.allocatable.items())), None
        counts: dict[Size, int] = {}
        for s in self.shapes:
            key = tuple(sorted(s.allocatable.items()))
            counts[key] = counts.get(key, 0) + s.count
        return (), tuple(counts.items())

    def fits_future(self, req: Resources) -> bool:
        """Fits once the releasing resources are gone (Volcano's FutureIdle), net of pipelined work."""
        future = res.sub(res.add(self.idle, self.releasing), self.pipelined)
        return res.fits(req, future) and res.fits(req, self.largest_node())

    def largest_node(self) -> Resources:
        """The allocatable of the biggest node: a task larger than this can never run here."""
        if self.shapes is None:
            return self.allocatable
        out: Resources = {}
        for shape in self.shapes:
            out = res.maximum(out, shape.allocatable)
        return out

    def take(self, req: Resources, apart: dict[int, int] | None = None) -> tuple[int, int] | None:
        """Take ``req`` from idle; for a cluster from the best-fitting shape. Returns the undo token.

        ``apart`` (a spread job's own: how many of its nodes each shape holds) keeps the task off the
        nodes the job already has, as ``packs(spread=True)`` counted: nodes of one shape are alike, so
        a shape is free for it while it holds more nodes than the job's."""
        res.isub(self.idle, req)
        res.iadd(self.used, req)
        if self.shapes is None:
            return None
        best = self._best_shape(req, apart)
        if best < 0 and apart:  # a charge the caller could not keep apart (a report moved on): anywhere
            best = self._best_shape(req, None)
        if best < 0:
            raise ValueError(f"no node of cluster {self.name} fits {req}")
        src = self.shapes[best]
        src.count -= 1
        left = res.sub(src.idle, req)
        dst = next(
            (j for j, shape in enumerate(self.shapes) if shape.idle == left and shape.allocatable == src.allocatable),
            -1,
        )
        if dst < 0:
            self.shapes.append(NodeShape(src.allocatable, left, 0))
            dst = len(self.shapes) - 1
        self.shapes[dst].count += 1
        if apart is not None:
            apart[dst] = apart.get(dst, 0) + 1
        return best, dst

    def _best_shape(self, req: Resources, apart: dict[int, int] | None) -> int:
        assert self.shapes is not None
        best = -1
        best_room = float("inf")
        for i, shape in enumerate(self.shapes):
            if shape.count > (apart.get(i, 0) if apart else 0) and res.fits(req, shape.idle):
                room = sum(shape.idle.values())
                if room < best_room:
                    best, best_room = i, room
        return best

    def give(self, req: Resources, token: tuple[int, int] | None) -> None:
        """Undo ``take``: the resources return to the very node shape they came from."""
        res.iadd(self.idle, req)
        res.isub(self.used, req)
        if self.shapes is not None and token is not None:
            self.shapes[token[1]].count -= 1
            self.shapes[token[0]].count += 1


Size = tuple[tuple[str, float], ...]  # resources as a key: sorted (name, quantity) pairs
Sizes = tuple[Size, tuple[tuple[Size, int], ...] | None]  # ``NodeInfo.sizes``: (a node's, None) or ((), shapes)


@lru_cache(maxsize=1 << 14)
def _could_hold(sizes: Sizes, reqs: tuple[tuple[Size, int], ...], spread: bool) -> bool:
    """``packs`` on the node (or cluster) of these sizes, empty."""
    allocatable, shapes = sizes
    if shapes is None:
        empty = NodeInfo("", dict(allocatable))
    else:
        empty = NodeInfo("", {}, shapes=[NodeShape(dict(size), dict(size), count) for size, count in shapes])
    return empty.packs([(dict(req), n) for req, n in reqs], spread)


@dataclass(slots=True, eq=False)
class QueueInfo:
    name: str  # path, "research.vision"; the root is ""
    weight: float = 1.0
    guarantee: Resources = field(default_factory=dict)
    cap: Resources | None = None
    accept_surplus: bool = True
    priority_factor: float = 1.0
    reclaimable: bool = True

    @property
    def parent(self) -> str | None:
        if self.name == ROOT:
            return None
        return self.name.rsplit(".", 1)[0] if "." in self.name else ROOT


@dataclass(slots=True)
class Usage:
    """Fair-share inputs at snapshot time: real user priorities and priority factors."""

    queue_rup: Mapping[str, float] = field(default_factory=dict)
    tenant_rup: Mapping[str, float] = field(default_factory=dict)
    tenant_factor: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class Snapshot:
    """What a session sees. ``jobs`` holds running jobs and (without ``pending``) pending ones."""

    nodes: list[NodeInfo]
    jobs: list[JobInfo] = field(default_factory=list)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    pending: PendingIndex | None = None  # kept by the caller across cycles, read lazily
    # What ``jobs`` hold per (leaf queue, tenant), when the caller keeps that total across cycles
    # (then ``jobs`` are running jobs only): the session need not sum every running job again.
    held: dict[tuple[str, str], Resources] | None = None
    # The nodes' judgements per task shape, when the caller keeps its nodes between cycles.
    evaluations: NodeEvaluations | None = None
    # Each job's held and wanted resources, when the caller keeps its jobs between cycles.
    totals: JobTotals | None = None
    # When the running tasks free what they hold, per node, when the caller keeps that across cycles
    # (then a reservation need not walk every running task).
    releases: Mapping[str, Releases] | None = None
    # The schedulable nodes' allocatable in total, when the caller keeps that across cycles.
    capacity: Resources | None = None
