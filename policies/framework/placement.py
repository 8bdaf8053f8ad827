"""Finding nodes for tasks without rescanning every node for every task.

Predicates and node scores depend only on a task's shape (resources, selector) and the node's
state, so the placer keeps, per shape, a heap of feasible nodes by score. Every change to a node
bumps its version and is logged; a heap re-evaluates only the nodes changed since it last looked.
A cycle that places 10,000 tasks on 1,000 nodes therefore evaluates each node once per shape plus
once per change, and a task that fits nowhere costs O(1) once the cluster is full. A caller that
keeps its nodes between cycles (a member agent) also keeps their evaluations (``NodeEvaluations``),
so a cycle evaluates only the nodes that changed since the last one.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Generator
from typing import TYPE_CHECKING

from policies import resources as res
from policies.format import format_resources
from policies.framework.conf import SchedulerConf
from policies.framework.decisions import (
    CORDONED,
    FAIR_SHARE,
    INSUFFICIENT,
    LABELS,
    RESERVATION,
    SPREAD,
    TOO_BIG,
    split_reason,
)
from policies.framework.statement import Statement
from policies.resources import Resources
from policies.snapshot import JobInfo, NodeInfo, TaskInfo

if TYPE_CHECKING:
    from policies.framework.session import Session

Signature = tuple[tuple[tuple[str, float], ...], tuple[tuple[str, str], ...], str]
Judgement = tuple[str | None, float]  # (why the node cannot take the task, or None; its score then)


class _Shape:
    __slots__ = ("task", "job", "heap", "cursor", "fails", "summary", "summary_at", "could")

    def __init__(self, task: TaskInfo, job: JobInfo) -> None:
        self.task = task
        self.job = job
        self.heap: list[tuple[float, int, int]] = []
        self.cursor = 0
        self.fails: dict[int, str] = {}
        self.summary: dict[tuple[tuple[str, float], ...] | None, tuple[str, str]] = {}  # explain's, by whole need
        self.summary_at = -1
        self.could: dict[object, bool] = {}  # could_ever's answers, by the gang's request


class NodeEvaluations:
    """Each node's judgement per task shape, kept by the caller from one session to the next.

    A judgement depends only on the task's shape and the node's state, under the session's conf.
    Sessions put back every node they change, so a node the caller hands the next session as the
    very same ``NodeInfo`` (under the same conf) is judged as before. Only the shapes the last
    session looked at are kept.
    """

    def __init__(self) -> None:
        self._conf: SchedulerConf | None = None
        self._last: dict[Signature, dict[str, tuple[NodeInfo, Judgement]]] = {}
        self._current: dict[Signature, dict[str, tuple[NodeInfo, Judgement]]] = {}

    def begin(self, conf: SchedulerConf) -> None:
        """A session opens: what the previous one found is what this one may reuse."""
        self._last = self._current if conf is self._conf else {}
        self._current = {}
        self._conf = conf

    def recall(self, sig: Signature) -> dict[str, tuple[NodeInfo, Judgement]]:
        return self._last.get(sig, {})

    def keep(self, sig: Signature, judged: dict[str, tuple[NodeInfo, Judgement]]) -> None:
        self._current[sig] = judged


class Placer:
    def __init__(self, ssn: Session, evaluations: NodeEvaluations | None = None) -> None:
        self.ssn = ssn
        self._shapes: dict[Signature, _Shape] = {}
        self._last: tuple[Resources, JobInfo, Signature] | None = None  # the last task's resources, job, signature
        self._evaluations = evaluations
        self._nodes_apart = not (ssn.nodes and ssn.nodes[0].shapes is not None)
        if evaluations is not None:
            evaluations.begin(ssn.conf)

    @staticmethod
    def signature(task: TaskInfo, job: JobInfo, nodes_apart: bool = True) -> Signature:
        """What a node's judgement depends on. Among nodes told apart a spread job's also depends on
        where its own tasks are (one per node), so its tasks share a shape with no other job's; a
        cluster's nodes are not told apart (``packs`` counts a node per task), so there it needs none."""
        own = job.id if job.spread and nodes_apart else ""
        return tuple(sorted(task.resources.items())), tuple(sorted(job.cluster_selector.items())), own

    def _check(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> str | None:
        """None when the task can go to the node now or once releasing resources are gone."""
        veto = self.ssn.predicate(task, job, node)
        if veto is not None:
            return str(veto[1])
        if node.fits(task.resources) or (node.releasing and node.fits_future(task.resources)):
            return None
        return INSUFFICIENT

    def _judge(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> Judgement:
        reason = self._check(task, job, node)
        return reason, self.ssn.node_score(task, job, node) if reason is None else 0.0

    def _evaluate(self, shape: _Shape, i: int) -> None:
        """Judge node ``i`` again after it changed."""
        reason, score = self._judge(shape.task, shape.job, self.ssn.nodes[i])
        if reason is None:
            heapq.heappush(shape.heap, (-score, i, self.ssn.node_version[i]))
            shape.fails.pop(i, None)
        else:
            shape.fails[i] = reason

    def _build(self, sig: Signature, shape: _Shape) -> None:
        """Judge every node for a shape new to this session, reusing the last session's judgement of a
        node this session has not changed and the caller handed over unchanged."""
        known = self._evaluations.recall(sig) if self._evaluations is not None else {}
        judged: dict[str, tuple[NodeInfo, Judgement]] = {}
        version = self.ssn.node_version
        for i, node in enumerate(self.ssn.nodes):
            if version[i]:
                reason, score = self._judge(shape.task, shape.job, node)
            else:
                seen = known.get(node.name)
                if seen is None or seen[0] is not node:
                    seen = (node, self._judge(shape.task, shape.job, node))
                judged[node.name] = seen  # the very entry when reused: nothing is built for an unchanged node
                reason, score = seen[1]
            if reason is None:
                shape.heap.append((-score, i, version[i]))
            else:
                shape.fails[i] = reason
        heapq.heapify(shape.heap)
        if self._evaluations is not None:
            self._evaluations.keep(sig, judged)

    def _shape(self, task: TaskInfo, job: JobInfo) -> _Shape:
        last = self._last  # a gang's replicas share one resources dict: their signature is worked out once
        if last is not None and last[0] is task.resources and last[1] is job:
            sig = last[2]
        else:
            sig = self.signature(task, job, self._nodes_apart)
            self._last = (task.resources, job, sig)
        shape = self._shapes.get(sig)
        if shape is None:
            shape = self._shapes[sig] = _Shape(task, job)
            self._build(sig, shape)
            shape.cursor = len(self.ssn.changes)
        else:
            changes = self.ssn.changes
            if shape.cursor < len(changes):
                for i in set(changes[shape.cursor :]):
                    self._evaluate(shape, i)
                shape.cursor = len(changes)
                if len(shape.heap) > 2 * len(self.ssn.nodes) + 8:  # mostly stale entries of changed nodes
                    version = self.ssn.node_version
                    shape.heap = [e for e in shape.heap if e[2] == version[e[1]]]
                    heapq.heapify(shape.heap)
        return shape

    def best(self, task: TaskInfo, job: JobInfo) -> NodeInfo | None:
        """The highest-scoring feasible node that starting ``job`` now would not take from a reservation."""
        shape = self._shape(task, job)
        heap, version, nodes, book = shape.heap, self.ssn.node_version, self.ssn.nodes, self.ssn.book
        aside = []
        found = None
        while heap:
            _, i, v = heap[0]
            if v != version[i]:
                heapq.heappop(heap)
                continue
            if book is None or book.allows(nodes[i].name, task.resources, self.ssn.now, job.walltime):
                found = nodes[i]
                break
            aside.append(heapq.heappop(heap))
        for entry in aside:
            heapq.heappush(heap, entry)
        if found is None and aside:
            self.ssn.why(job, RESERVATION, "backfill", "starting now would delay a reservation on every fitting node")
        return found

    def candidates(self, shape: _Shape) -> Generator[NodeInfo, None, None]:
        """The shape's feasible nodes, best first, taken off its heap only as far as the caller reads
        (a job mostly takes the first); stale entries met on the way are dropped for good, the live
        ones go back when the caller closes the iterator."""
        heap, version, nodes = shape.heap, self.ssn.node_version, self.ssn.nodes
        taken: list[tuple[float, int, int]] = []
        try:
            while heap:
                entry = heapq.heappop(heap)
                if entry[2] == version[entry[1]]:
                    taken.append(entry)
                    yield nodes[entry[1]]
        finally:
            for entry in taken:
                heapq.heappush(heap, entry)

    @property
    def noun(self) -> str:
        """What this session's nodes are: member clusters (summarised by node shape) or nodes; with
        none, clusters when the conf places whole jobs (as the global one does)."""
        nodes = self.ssn.nodes
        return "cluster" if (nodes[0].shapes is not None if nodes else self.ssn.whole_job) else "node"

    def explain(self, task: TaskInfo, job: JobInfo, whole: Resources | None = None) -> tuple[str, str]:
        """Why no node takes ``task`` (or, with ``whole``, the whole job whose largest task it is): the
        nearest miss, and a count of each. A node that matches the job and only lacks room now means
        the job waits for room, however many others lack its labels. Kept per shape until a node
        changes: a backlog asks it of job after job."""
        shape = self._shape(task, job)
        if shape.summary_at != shape.cursor:
            shape.summary.clear()
            shape.summary_at = shape.cursor
        key = None if whole is None else tuple(sorted(whole.items()))
        said = shape.summary.get(key)
        if said is None:
            said = shape.summary[key] = self._why_not(shape, whole)
        return said

    def _why_not(self, shape: _Shape, whole: Resources | None) -> tuple[str, str]:
        version = self.ssn.node_version
        fitting = sum(1 for _, i, v in shape.heap if v == version[i])
        counts = Counter(shape.fails.values())
        missed = sorted(counts, key=_nearness)
        noun = self.noun
        parts = [f"{counts[c]} {_phrase(c, noun)}" for c in missed]
        if fitting:  # they fit a task, yet the caller could not use them: the whole job, or reservations
            held = "short of room for all of it" if whole is not None else "kept for a reservation"
            parts.insert(0, f"{fitting} {held}")
        code = INSUFFICIENT if fitting or not missed else missed[0]
        what = format_resources(shape.task.resources) if whole is None else f"the whole job ({format_resources(whole)})"
        detail = ", ".join(parts) or f"there are no {noun}s"
        return code, f"0/{len(self.ssn.nodes)} {noun}s can take {what} now: {detail}"

    # ---- placing a job -------------------------------------------------------------------------

    def place(self, job: JobInfo, stmt: Statement) -> bool:
        """Place ``job``'s pending tasks; True when it made progress worth keeping."""
        if self.ssn.whole_job:
            return self._place_whole(job, stmt)
        return self._place_tasks(job, stmt)

    def _allowed(self, task: TaskInfo, job: JobInfo) -> bool:
        """The queue/tenant limits (shares, caps) let the job take ``task`` now."""
        veto = self.ssn.allocatable(task, job)
        if veto is None:
            return True
        code, message = split_reason(str(veto[1]))
        if code == FAIR_SHARE:
            self.ssn.share_held = True
        self.ssn.why(job, code, veto[0], message)
        return False

    def _place_tasks(self, job: JobInfo, stmt: Statement) -> bool:
        ssn = self.ssn
        placed = False
        for task in ssn.pending_tasks(job):
            if not self._allowed(task, job):
                break
            node = self.best(task, job)
            if node is None:
                code, message = self.explain(task, job)
                ssn.why(job, code, "allocate", message)
                break
            if node.fits(task.resources):
                stmt.allocate(task, job, node)
            else:
                stmt.pipeline(task, job, node)
            placed = True
            if ssn.job_ready(job):
                break
        return placed

    def _place_whole(self, job: JobInfo, stmt: Statement) -> bool:
        """The job's gang on one node (at the global level: one cluster, packed node by node).

        A rigid job's gang is all its tasks. An elastic job (minAvailable below its tasks) starts when
        its gang fits, as in Volcano; the tasks beyond it are its member session's to run as room
        allows, so only the gang is placed and charged here (two elastic jobs can then start side by
        side and share the rest by the member's DRF)."""
        ssn = self.ssn
        tasks = ssn.gang_to_place(job)
        if not tasks:
            return False
        runs = _runs(tasks)
        need: Resources = {}
        for task, count in runs:
            res.iadd(need, task.resources, count)
        if not self._allowed(TaskInfo(job.id, "*", -1, need), job):
            return False
        largest = max(runs, key=lambda run: sum(run[0].resources.values()))[0]
        reqs = [(task.resources, count) for task, count in runs]
        # Most tries of a backlog meet full clusters: a candidate whose idle cannot hold the whole need
        # cannot pack it (``packs`` asks the same first), so when none can, only the reason is left and
        # the candidates (the shape's live heap entries) need not be sorted.
        version, nodes = ssn.node_version, ssn.nodes
        shape = self._shape(largest, job)
        if any(v == version[i] and res.fits(need, nodes[i].idle) for _, i, v in shape.heap):
            candidates = self.candidates(shape)
            try:
                for node in candidates:
                    if not node.packs(reqs, job.spread):
                        continue
                    # Predicates read a task's shape, not its index: one task of each run answers for the run.
                    if any(ssn.predicate(t, job, node) is not None for t, _ in runs if t is not largest):
                        continue
                    if ssn.book is not None and not ssn.book.allows(node.name, need, ssn.now, job.walltime):
                        ssn.why(job, RESERVATION, "backfill", f"starting on {node.name} now would delay a reservation")
                        continue
                    for task in tasks:
                        stmt.allocate(task, job, node)
                    return True
            finally:
                candidates.close()
        if not self.could_ever(shape, reqs, job.spread):
            noun = self.noun
            largest_node = max((n.largest_node() for n in nodes), key=lambda a: sum(a.values()), default={})
            said = ", ".join(f"{count} x {format_resources(req)}" for req, count in reqs)
            message = (
                f"no {noun} can ever hold its gang ({said}) on its nodes at once; the largest node is "
                f"{format_resources(largest_node)}"
            )
            ssn.why(job, TOO_BIG, "allocate", message)
            return False
        code, message = self.explain(largest, job, need)
        ssn.why(job, code, "allocate", message)
        return False

    def could_ever(self, shape: _Shape, reqs: list[tuple[Resources, int]], spread: bool) -> bool:
        """Whether some node that takes the shape's task, or only lacks room or is cordoned for it now,
        could hold ``reqs`` at once were it empty. Kept per shape and request for the session: node
        sizes do not change within one."""
        key = (tuple((tuple(sorted(r.items())), n) for r, n in reqs), spread)
        known = shape.could.get(key)
        if known is None:
            nodes, version = self.ssn.nodes, self.ssn.node_version
            indices = {i for _, i, v in shape.heap if v == version[i]}
            indices |= {i for i, why in shape.fails.items() if why in (INSUFFICIENT, CORDONED)}
            known = shape.could[key] = any(nodes[i].could_hold(reqs, spread) for i in indices)
        return known


# How near each predicate's failure comes to placing the task: the predicates check labels, then size,
# then cordon, then a spread job's own tasks, and the framework then room, so a node that fails later
# got further (any other plugin's predicate ranks after size, labels last).
_NEAREST = {INSUFFICIENT: 0, SPREAD: 1, CORDONED: 2, TOO_BIG: 3, LABELS: 5}
_PHRASES = {
    INSUFFICIENT: "short of room",
    SPREAD: "holding another of its tasks (placement: spread)",
    CORDONED: "cordoned",
    LABELS: "not matching its clusterSelector",
}


def _nearness(code: str) -> int:
    return _NEAREST.get(code, 4)


def _phrase(code: str, noun: str) -> str:
    if code == TOO_BIG:
        return "too small" if noun == "node" else "without a node big enough"
    return _PHRASES.get(code, code)


def _runs(tasks: list[TaskInfo]) -> list[tuple[TaskInfo, int]]:
    """Consecutive tasks sharing one resources dict (a gang's replicas) as (first task, count)."""
    runs: list[tuple[TaskInfo, int]] = []
    first, count = None, 0
    for task in tasks:
        if first is not None and task.resources is first.resources:
            count += 1
            continue
        if first is not None:
            runs.append((first, count))
        first, count = task, 1
    if first is not None:
        runs.append((first, count))
    return runs
