"""The global scheduler's in-memory view, kept up to date event by event (never rebuilt).

Pending jobs live in a ``PendingIndex`` (O(log n) per change); jobs on clusters are kept per
cluster; each cluster keeps its latest report. The store-backed service feeds it from a watch, the
simulator feeds it directly: both then run the same cycle over ``snapshot()``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from federation import capabilities
from federation.lifecycle import ON_CLUSTER, dispatched_at
from federation.models import JobRecord, JobState, QueueTree
from federation.models.agent_report import NodeFacts, ReportFacts
from federation.models.cluster import LatestReport, RunningRef, node_kinds, running_refs
from federation.scheduler.dependencies import DependencyIndex
from federation.scheduler.job_view import held_by, job_info
from federation.scheduler.throttle import ArrayThrottles
from policies import JobInfo, NodeInfo, NodeShape, PendingIndex, QueueInfo, Snapshot, TaskInfo, TaskStatus, Usage
from policies import resources as res
from policies.format import format_labels, format_resources
from policies.profile import NO_RELEASES, Releases
from policies.resources import Resources

HELD = "held"
"""The block a hold on the job's record puts on it (``JobRecord.held_by``)."""
WAITING = "dependency"
"""The block of a job whose dependencies are not met (``DependencyIndex``)."""


@dataclass(frozen=True, slots=True)
class Misfit:
    """Why no joined cluster could ever hold a job, and the part of its spec that is why."""

    reason: str
    part: Literal["clusterSelector", "task", "gang", "placement"]
    task: str = ""  # the task too big for every node (part "task")


@dataclass(slots=True)
class Entry:
    """One live (non-terminal) job: its state, where it runs, and the stored bytes to CAS against."""

    info: JobInfo
    state: JobState
    revision: int
    raw: bytes
    cluster: str = ""
    epoch: int = 0
    started_at: float | None = None
    running: JobInfo | None = None  # the job as the snapshot shows it on its cluster, rebuilt only on change


@dataclass
class ClusterView:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    honours: frozenset[str] = frozenset()  # the job fields its backend honours, from its last report
    selectable: dict[str, str] = field(default_factory=dict)  # what selectors match: labels and honours
    cordoned: bool = False
    report_time: float | None = None
    nodes: Sequence[NodeFacts] = field(default_factory=list)
    reported_running: set[tuple[str, int]] = field(default_factory=set)
    expected_end: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, None] = field(default_factory=dict)  # an ordered set: snapshots list jobs in dispatch order
    # The report's node shapes net of dispatches it does not show yet, kept between cycles so a deep
    # backlog of in-flight dispatches is charged once each, not again every cycle; dropped when a
    # report arrives or a charged job leaves (then rebuilt from the report in dispatch order).
    room: NodeInfo | None = None
    charged: set[str] = field(default_factory=set)
    # Its jobs as the snapshot shows them, and when they free what they hold, for reservations: kept
    # between cycles, dropped when a job arrives, starts, leaves or gets a new expected end.
    running: list[JobInfo] = field(default_factory=list)
    releases: Releases | None = None

    def lost(self, now: float, after: float) -> bool:
        """Never reported, or silent for longer than ``after``: nothing may be placed on it."""
        return self.report_time is None or now - self.report_time > after


class FederationState:
    def __init__(self) -> None:
        self.pending = PendingIndex()
        self.entries: dict[str, Entry] = {}
        self.clusters: dict[str, ClusterView] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.tree: QueueTree | None = None
        self.marked: set[str] = set()  # queued jobs shown as Reserved or Unschedulable
        self.shapes_version = 0  # moves when a cluster's labels or node shapes change
        # What the jobs on clusters hold per (queue, tenant), kept as they come and go so a cycle need
        # not sum every running job; with the count of jobs behind each total, and the JobInfo each job
        # was counted by.
        self.held: dict[tuple[str, str], Resources] = {}
        self._holders: dict[tuple[str, str], int] = {}
        self._holding: dict[str, JobInfo] = {}
        self._never_fits: dict[str, tuple[int, Misfit | None]] = {}
        self._preemptible_held = 0  # preemptible jobs on clusters: what reclaim could take back
        # A job's whole request (every task), summed once per JobInfo: what it holds on a cluster and,
        # for may_act, what it needs there. Filled only as those ask.
        self._totals: dict[str, tuple[JobInfo, Resources]] = {}
        # Finished jobs still in the store (id -> ended, revision, state, queue, tenant), for the leader to
        # delete once past their retention, and a heap by end time over them. A job leaves the map when
        # its key is deleted; the heap drops such stale entries lazily, and is rebuilt when they are
        # the most of it (a stand-by never pops it).
        self.finished: dict[str, tuple[float, int, str, str, str]] = {}
        self._finished_by_end: list[tuple[float, str]] = []
        # Jobs back in the queue after a failed run, held out of ``pending`` until their retry time
        # (id -> that time), with a heap by time whose stale entries are dropped as they come up.
        self._backoff: dict[str, float] = {}
        self._backoff_by_time: list[tuple[float, str]] = []
        # Queued jobs something keeps out of the pending index, with what: ``HELD`` (a hold on the
        # record) or another module's block (``block``/``unblock``, e.g. dependencies not yet met).
        self.blocked: dict[str, set[str]] = {}
        self.dependencies = DependencyIndex(self.finished)
        self.throttles = ArrayThrottles()  # arrays' parallelism: their elements past it wait out of ``pending``
        self._dispatched: dict[str, float] = {}  # Dispatched jobs (not admitted yet): id -> dispatched at

    # ---- jobs --------------------------------------------------------------------------------

    def upsert_job(self, record: JobRecord, revision: int, raw: bytes) -> None:
        """Apply a job's latest stored version (stale revisions are ignored)."""
        old = self.entries.get(record.id)
        if old is not None and old.revision >= revision:
            return
        if record.state.terminal:
            self.remove_job(record.id)
            for job_id in self.dependencies.ended(record.id, record.state):
                self.unblock(job_id, WAITING)
            ended = record.released_at()
            self.finished[record.id] = (ended, revision, record.state.value, record.queue, record.tenant)
            heapq.heappush(self._finished_by_end, (ended, record.id))
            return
        self.finished.pop(record.id, None)  # requeued after it ended (``fedq requeue``): live again
        stays_queued = False
        kept: JobInfo | None = None
        if old is not None and (old.info.priority, old.info.queue, old.info.tenant, old.info.walltime) == (
            record.priority,
            record.queue,
            record.tenant,
            record.spec.walltime,
        ):
            # A mark (Reserved, Unschedulable) or a hold keeps a job's place in line, and a job leaving the
            # queue keeps its compact form (an update of its priority, queue or walltime re-keys it; a
            # requeue, which resets the wait, builds it anew).
            stays_queued = old.state.queued and record.state.queued
            if stays_queued or not record.state.queued:
                kept = old.info
        info = kept if kept is not None else job_info(record)
        if old is not None and old.cluster and old.cluster != record.cluster:
            self._leave_cluster(record.id, old.cluster)
        entry = Entry(info, record.state, revision, raw, record.cluster, record.epoch, record.start_time)
        self.entries[record.id] = entry
        throttled = self.throttles.track(record)
        sent = dispatched_at(record)
        if sent is None:
            self._dispatched.pop(record.id, None)
        else:
            self._dispatched[record.id] = sent
        if record.state in (JobState.RESERVED, JobState.UNSCHEDULABLE):
            self.marked.add(record.id)
        else:
            self.marked.discard(record.id)
        if record.state.queued:
            self._set_block(record.id, HELD, record.held_by is not None)
            if record.after:
                self._set_block(record.id, WAITING, self.dependencies.waits(record))
            if not stays_queued:  # a mark (Reserved, Unschedulable) keeps the job's place in line
                self._enqueue(record, info)
            self._consider(record.id)
        else:
            self._backoff.pop(record.id, None)
            self.blocked.pop(record.id, None)
            self.pending.remove(record.id)
            if throttled is not None:
                self._regrant(throttled)
        if record.state in ON_CLUSTER and record.cluster:
            view = self.clusters.setdefault(record.cluster, ClusterView(record.cluster))
            if record.id not in view.jobs or old is None or old.started_at != record.start_time:
                view.releases = None  # a job new to the view (also one a rejoined cluster lost) or restarted
            view.jobs[record.id] = None
            if self._holding.get(record.id) is not info:
                self._hold(record.id, info)
            if view.room is not None:
                _charge(view, entry)

    def remove_job(self, job_id: str) -> None:
        if self.finished.pop(job_id, None) is not None and len(self._finished_by_end) > 2 * len(self.finished) + 64:
            self._finished_by_end = [(ended, job) for job, (ended, *_) in self.finished.items()]
            heapq.heapify(self._finished_by_end)
        entry = self.entries.pop(job_id, None)
        if entry is None:
            return
        self.marked.discard(job_id)
        self._never_fits.pop(job_id, None)
        self._backoff.pop(job_id, None)
        self.blocked.pop(job_id, None)
        self.dependencies.forget(job_id)
        self._dispatched.pop(job_id, None)
        self.pending.remove(job_id)
        throttled = self.throttles.forget(job_id)
        if throttled is not None:
            self._regrant(throttled)
        if entry.cluster:
            self._leave_cluster(job_id, entry.cluster)
        self._totals.pop(job_id, None)

    def _enqueue(self, record: JobRecord, info: JobInfo) -> None:
        """Into the pending index (anew: its key may have changed) if a cycle may consider it; after a
        failed run, only once its retry time has come (``release``)."""
        self.pending.remove(record.id)
        if record.retry_at is None:
            self._backoff.pop(record.id, None)
        else:
            self._backoff[record.id] = record.retry_at
            heapq.heappush(self._backoff_by_time, (record.retry_at, record.id))

    def considered(self, job_id: str) -> bool:
        """Whether a cycle may consider this queued job: nothing blocks it (a hold, another module's
        block), its retry time has come and its array's throttle gives it a slot. The one rule of which
        queued jobs may be dispatched, reserved or counted as demand: the pending index holds exactly
        the queued jobs it admits."""
        return self._eligible(job_id) and not self.throttles.held_back(job_id)

    def _eligible(self, job_id: str) -> bool:
        """Queued, and nothing but its array's throttle could keep it out of a cycle."""
        entry = self.entries.get(job_id)
        return entry is not None and entry.state.queued and job_id not in self.blocked and job_id not in self._backoff

    def block(self, job_id: str, why: str) -> None:
        """Keep a queued job out of every cycle for ``why`` (kept in its place: ``unblock`` puts it back)."""
        self._set_block(job_id, why, True)
        self._consider(job_id)

    def unblock(self, job_id: str, why: str) -> None:
        self._set_block(job_id, why, False)
        self._consider(job_id)

    def _set_block(self, job_id: str, why: str, on: bool) -> None:
        whys = self.blocked.get(job_id)
        if on:
            self.blocked.setdefault(job_id, set()).add(why)
        elif whys is not None:
            whys.discard(why)
            if not whys:
                del self.blocked[job_id]

    def _consider(self, job_id: str) -> None:
        """The pending index as ``considered`` says: in it, with the job's current form, or out of it;
        for an element of a throttled array, its array's slots first, as they may have moved with it."""
        array = self.throttles.array_of(job_id)
        if array is not None:
            self._regrant(array)
        self._place(job_id)

    def _regrant(self, array: str) -> None:
        for element in self.throttles.regrant(array, self._eligible):
            self._place(element)

    def _place(self, job_id: str) -> None:
        if not self.considered(job_id):
            self.pending.remove(job_id)
        elif job_id not in self.pending:
            self.pending.add(self.entries[job_id].info)

    def settle(self) -> None:
        """After a load: a dependency on a job the store no longer holds is met (see ``dependencies``)."""
        for job_id in self.dependencies.settle(lambda target: target in self.entries or target in self.finished):
            self.unblock(job_id, WAITING)

    def release(self, now: float) -> None:
        """Put the jobs whose retry time has come into the pending index (unless something blocks them)."""
        heap = self._backoff_by_time
        while heap and heap[0][0] <= now:
            at, job_id = heapq.heappop(heap)
            if self._backoff.get(job_id) == at:
                del self._backoff[job_id]
                self._consider(job_id)

    def _leave_cluster(self, job_id: str, cluster: str) -> None:
        view = self.clusters.get(cluster)
        if view is not None and job_id in view.jobs:
            del view.jobs[job_id]
            view.releases = None
            self._hold(job_id, None)
            if job_id in view.charged:
                view.room = None

    # ---- clusters and queues -----------------------------------------------------------------

    def set_cluster(self, name: str, labels: dict[str, str], cordoned: bool) -> None:
        view = self.clusters.setdefault(name, ClusterView(name))
        self._relabel(view, labels, view.honours)
        view.cordoned = cordoned
        view.room = None

    def _relabel(self, view: ClusterView, labels: dict[str, str], honours: frozenset[str]) -> None:
        """A job's selector matches a cluster's labels and the fields its backend honours as one."""
        selectable = capabilities.cluster_labels(labels, honours)
        if view.selectable != selectable:
            self.shapes_version += 1
        view.labels, view.honours, view.selectable = dict(labels), honours, selectable

    def remove_cluster(self, name: str) -> None:
        view = self.clusters.pop(name, None)
        if view is not None:
            self.shapes_version += 1
            for job_id in view.jobs:
                self._hold(job_id, None)

    def _hold(self, job_id: str, info: JobInfo | None) -> None:
        """Count ``info`` (a job on a cluster) in ``held`` instead of what the job counted for before."""
        before = self._holding.pop(job_id, None)
        if before is not None:
            lane = (before.queue, before.tenant)
            res.iadd(self.held[lane], self._total(before), -1.0)
            self._holders[lane] -= 1
            if not self._holders[lane]:
                del self.held[lane], self._holders[lane]
            self._preemptible_held -= before.preemptible
        if info is not None:
            lane = (info.queue, info.tenant)
            self._preemptible_held += info.preemptible
            self._holding[job_id] = info
            res.iadd(self.held.setdefault(lane, {}), self._total(info))
            self._holders[lane] = self._holders.get(lane, 0) + 1

    def set_report(self, name: str, time: float, report: ReportFacts) -> None:
        """A report as it arrived at ``time`` (the simulator's agents hand theirs over without the store)."""
        self._set(name, time, report.nodes, running_refs(time, report), report.honours)

    def set_latest(self, name: str, latest: LatestReport) -> None:
        self._set(name, latest.time, latest.nodes, latest.running, latest.honours)

    def _set(
        self, name: str, time: float, nodes: Sequence[NodeFacts], running: list[RunningRef], honours: Sequence[str]
    ) -> None:
        view = self.clusters.setdefault(name, ClusterView(name))
        # Never back: when it was last heard (``set_heard``) may be later than its last whole report.
        view.report_time = time if view.report_time is None else max(view.report_time, time)
        self._relabel(view, view.labels, frozenset(honours))
        if _shapes(view.nodes) != _shapes(nodes):
            self.shapes_version += 1
        view.nodes = nodes
        view.reported_running = {(job_id, epoch) for job_id, epoch, _ in running}
        expected_end = {job_id: end for job_id, _, end in running if end is not None}
        if expected_end != view.expected_end:
            view.expected_end = expected_end
            view.releases = None
        view.room = None

    def set_heard(self, name: str, time: float) -> None:
        """A report that changed nothing but when the cluster was last heard (``ClusterReport.unchanged_since``)."""
        view = self.clusters.get(name)
        if view is not None and (view.report_time is None or time > view.report_time):
            view.report_time = time

    def set_queues(self, tree: QueueTree | None) -> None:
        self.tree = tree
        self.queues = {}
        if tree is None:
            return
        for path, node in tree.nodes.items():
            config = node.config
            self.queues[path] = QueueInfo(
                path,
                weight=config.weight,
                guarantee=dict(config.guarantee),
                cap=dict(config.cap) or None,
                accept_surplus=config.accept_surplus,
                priority_factor=config.priority_factor,
            )

    def never_fits(self, info: JobInfo) -> Misfit | None:
        """Why no joined cluster could ever hold the job, if that is certain (capacity, not load).

        Remembered per job until a cluster's labels or node shapes change: waiting jobs are asked
        every cycle, and the answer depends only on those. The API asks it too, at submit."""
        known = self._never_fits.get(info.id)
        if known is not None and known[0] == self.shapes_version:
            return known[1]
        why = self._never_fits_now(info)
        self._never_fits[info.id] = (self.shapes_version, why)
        return why

    def matching(self, selector: dict[str, str]) -> list[ClusterView]:
        """The clusters whose labels a ``clusterSelector`` matches."""
        return [v for v in self.clusters.values() if all(v.selectable.get(k) == val for k, val in selector.items())]

    def _never_fits_now(self, info: JobInfo) -> Misfit | None:
        if not self.clusters or not any(view.nodes for view in self.clusters.values()):
            return None
        matching = self.matching(info.cluster_selector)
        if not matching:
            return Misfit(f"no cluster has the labels {format_labels(info.cluster_selector)}", "clusterSelector")
        if any(view.report_time is None for view in matching):
            return None  # joined, its nodes not reported yet: it could hold anything
        for task in {id(t.resources): t for t in info.tasks}.values():
            if not any(res.fits(task.resources, n.allocatable) for v in matching for n in v.nodes):
                needs = format_resources(task.resources)
                why = f"task {task.name} needs {needs}: more than any node of any matching cluster"
                return Misfit(why, "task", task.name)
        runs = info.gang_runs()
        if not any(_empty(v.nodes).packs(runs) for v in matching):
            why = (
                f"the gang of {info.gang_size} tasks ({_gang_text(info)}) fits no matching cluster's nodes, "
                f"largest node {format_resources(_largest(matching))}"
            )
            return Misfit(why, "gang")
        if info.spread and not any(_empty(v.nodes).packs(runs, spread=True) for v in matching):
            why = f"the gang needs {info.gang_size} nodes of its own (placement: spread): no matching cluster has them"
            return Misfit(why, "placement")
        return None

    def may_act(self, now: float, lost_after: float) -> bool:
        """Whether a global cycle now could dispatch, evict or find a job Unschedulable.

        False only when that is certain, so a caller that plans on every change (the simulator) may
        skip the cycle: a job is placed whole on one cluster, so it needs its whole request (an elastic
        job: its gang's) idle on one schedulable cluster; reclaim needs a preemptible job on a cluster;
        and a job no cluster could ever hold is to be marked. O(pending jobs), stopping at the first that could act."""
        self.release(now)
        if self._preemptible_held:
            return True
        room: Resources = {}
        for view in self.clusters.values():
            if not (view.cordoned or view.lost(now, lost_after)):
                room = res.maximum(room, self._room(view).idle)
        for info in self.pending.jobs():
            # An elastic job is placed by its gang only (``Placer._place_whole``): that is what must fit.
            need = info.min_request() if info.gang_size < len(info.tasks) else self._total(info)
            if res.fits(need, room):
                return True
            # One no cluster could ever hold is to be marked, unless it already is.
            if self.never_fits(info) is not None and self.entries[info.id].state is not JobState.UNSCHEDULABLE:
                return True
        return False

    def _total(self, info: JobInfo) -> Resources:
        known = self._totals.get(info.id)
        if known is None or known[0] is not info:
            known = self._totals[info.id] = (info, held_by(info))
        return known[1]

    def finished_before(self, time: float) -> list[tuple[str, int, str, str, str]]:
        """Take the finished jobs that ended before ``time``: (id, revision, state, queue, tenant) each. They
        stay in ``finished`` until their deletion arrives."""
        due = []
        heap = self._finished_by_end
        while heap and heap[0][0] < time:
            ended, job_id = heapq.heappop(heap)
            known = self.finished.get(job_id)
            if known is not None and known[0] == ended:
                due.append((job_id, *known[1:]))
        return due

    def lost_clusters(self, now: float, after: float) -> list[str]:
        return [v.name for v in self.clusters.values() if v.lost(now, after)]

    def not_admitted(self, now: float, within: float) -> list[tuple[str, str]]:
        """(job, cluster) of the jobs Dispatched longer than ``within`` ago, in dispatch order."""
        late = [(at, job_id) for job_id, at in self._dispatched.items() if now - at > within]
        return [(job_id, self.entries[job_id].cluster) for _, job_id in sorted(late)]

    # ---- the snapshot a cycle works on ---------------------------------------------------------

    def snapshot(self, now: float, lost_after: float, usage: Usage | None = None) -> Snapshot:
        """Clusters as nodes with node shapes, free capacity net of dispatches not yet in a report; the
        jobs whose retry time has come join the pending ones first."""
        self.release(now)
        nodes: list[NodeInfo] = []
        running: list[JobInfo] = []
        releases: dict[str, Releases] = {}
        for view in self.clusters.values():
            if view.releases is None:
                view.running = [
                    self._running_job(entry, view) for job_id in view.jobs if (entry := self.entries.get(job_id))
                ]
                # releases_of, without its tests: every task of a job shown here runs here until the job's end.
                ends = [
                    (t.expected_end, t.resources) for j in view.running for t in j.tasks if t.expected_end is not None
                ]
                view.releases = Releases(ends) if ends else NO_RELEASES
            running += view.running
            releases[view.name] = view.releases
            node = self._room(view).clone()
            node.unschedulable = view.cordoned or view.lost(now, lost_after)
            nodes.append(node)
        return Snapshot(
            nodes,
            running,
            dict(self.queues),
            usage or Usage(),
            pending=self.pending,
            held=self.held,
            releases=releases,
        )

    def _room(self, view: ClusterView) -> NodeInfo:
        """The cluster's capacity as reported, with every in-flight dispatch charged (built once per report)."""
        if view.room is None:
            shapes = [NodeShape(dict(n.allocatable), dict(n.free), n.count) for n in view.nodes if not n.unschedulable]
            view.room = NodeInfo(view.name, {}, labels=dict(view.selectable), shapes=shapes)
            view.charged = set()
            for job_id in view.jobs:
                entry = self.entries.get(job_id)
                if entry is not None:
                    _charge(view, entry)
        return view.room

    @staticmethod
    def _running_job(entry: Entry, view: ClusterView) -> JobInfo:
        info = entry.info
        end = view.expected_end.get(info.id)
        if end is None and entry.started_at is not None and info.walltime is not None:
            end = entry.started_at + info.walltime
        cached = entry.running
        if (
            cached is not None
            and cached.tasks
            and cached.tasks[0].expected_end == end
            and cached.tasks[0].node == view.name
        ):
            return cached
        tasks = [
            TaskInfo(info.id, t.name, t.index, t.resources, TaskStatus.RUNNING, view.name, end, entry.started_at)
            for t in info.tasks
        ]
        entry.running = JobInfo(
            info.id,
            info.queue,
            info.tenant,
            info.priority,
            info.submit_time,
            info.min_available,
            info.preemptible,
            info.walltime,
            info.cluster_selector,
            tasks,
            entry.started_at,
            spread=info.spread,
        )
        return entry.running


def _empty(nodes: Sequence[NodeFacts]) -> NodeInfo:
    """A cluster as its reports show it, every node idle: what it could ever hold, node by node."""
    return NodeInfo("", {}, shapes=[NodeShape(n.allocatable, dict(n.allocatable), n.count) for n in nodes])


def _largest(views: list[ClusterView]) -> Resources:
    """The biggest node of these clusters (by the sum of its quantities), for a message."""
    nodes = [n.allocatable for v in views for n in v.nodes]
    return max(nodes, key=lambda a: sum(a.values()), default={})


def _gang_text(info: JobInfo) -> str:
    """The smallest gang per task, as ``worker: 4 x cpu=10``."""
    counts: dict[str, tuple[Resources, int]] = {}
    for task in info.min_gang():
        known = counts.get(task.name)
        counts[task.name] = (task.resources, 1 if known is None else known[1] + 1)
    return ", ".join(f"{name}: {count} x {format_resources(req)}" for name, (req, count) in counts.items())


def _shapes(nodes: Sequence[NodeFacts]) -> frozenset[tuple[object, int]]:
    return frozenset(node_kinds(nodes).items())


def _charge(view: ClusterView, entry: Entry) -> None:
    """Dispatched but not yet in the cluster's report: hold its resources so nothing double-books them."""
    node = view.room
    if node is None or not view.nodes or entry.info.id in view.charged:
        return
    if (entry.info.id, entry.epoch) in view.reported_running:
        return
    view.charged.add(entry.info.id)
    info = entry.info
    apart: dict[int, int] | None = {} if info.spread else None  # a node per task, as it was placed
    # As the global placer charged it: an elastic job's gang (its member runs the rest as room allows).
    for task in info.min_gang() if info.gang_size < len(info.tasks) else info.tasks:
        if node.fits(task.resources):
            node.take(task.resources, apart)
