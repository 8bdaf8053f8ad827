"""Session: one scheduling cycle over a snapshot, at either level.

The session changes the snapshot's nodes (or clusters) and task states in place while it runs;
``close_session`` puts every node and task it touched back, so the caller's snapshot objects (which
the global level keeps across cycles in a PendingIndex, and the local level keeps while a node is
unchanged) come out unchanged. Decisions are the only output.

This module opens, runs and closes a session. What the session is made of has a module each,
mixed into ``Session`` so that plugins and actions reach all of it as one object, one attribute
away, as they do on every ordering key and allocation: the queue tree and its totals
(``queue_totals``), the questions to the plugins (``hook_calls``), and the changes to nodes and
tasks that ``close`` puts back (``bookkeeping``).
"""

from __future__ import annotations

from operator import attrgetter
from time import perf_counter
from typing import TYPE_CHECKING, ClassVar

from policies import resources as res
from policies.clock import Clock
from policies.framework.bookkeeping import Bookkeeping
from policies.framework.conf import Arguments, SchedulerConf
from policies.framework.decisions import Decisions, Reason
from policies.framework.hook_calls import HookCalls
from policies.framework.hooks import Fn
from policies.framework.queue_totals import QueueTotals
from policies.framework.registry import ACTIONS, load_builtins
from policies.framework.tiers import give_back, take
from policies.ordering import PendingIndex
from policies.snapshot import OCCUPYING, JobInfo, Snapshot, TaskStatus

if TYPE_CHECKING:
    from policies.framework.placement import Placer
    from policies.profile import ReservationBook

MAX_REASONS = 4

_status = attrgetter("status")


class Plugin:
    """A policy, built by name from the conf's tiers.

    An instance serves one session at a time and is kept for the later sessions of the same tiers
    (``PluginSet``): ``hooks`` is asked once, when the instance is built, and ``on_session_open``
    must set everything the hooks read of a session.
    """

    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def hooks(self) -> dict[str, Fn]:
        """The hooks this plugin serves, by name; the conf's ``enableXxx: false`` leaves some out."""
        raise NotImplementedError

    def on_session_open(self, ssn: Session) -> None:
        """Take what the hooks need of this session."""

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to do by default."""


class Action:
    """One step of a cycle (Volcano's Action: a name and ``execute``)."""

    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        raise NotImplementedError


class Session(Bookkeeping, QueueTotals, HookCalls):
    def __init__(self, conf: SchedulerConf, snapshot: Snapshot, clock: Clock) -> None:
        self.conf = conf
        self.clock = clock
        self.now = clock.now()
        self.whole_job = conf.placement == "job"
        self._open_book(snapshot)
        self.usage = snapshot.usage
        self.index: PendingIndex | None = snapshot.pending
        self.jobs: dict[str, JobInfo] = {j.id: j for j in snapshot.jobs}
        if snapshot.held is not None:  # the caller keeps the totals of its jobs, which are all running
            self.pending_jobs: list[JobInfo] = []
            self.running_jobs = list(snapshot.jobs)
        else:
            self.pending_jobs = [j for j in snapshot.jobs if TaskStatus.PENDING in map(_status, j.tasks)]
            self.running_jobs = [j for j in snapshot.jobs if not OCCUPYING.isdisjoint(map(_status, j.tasks))]
        if snapshot.capacity is None:
            self.capacity = res.total(n.allocatable for n in self.nodes if not n.unschedulable)
        else:
            self.capacity = dict(snapshot.capacity)
        self._open_totals(snapshot)
        self.releases = snapshot.releases
        self.decisions = Decisions()
        self.inqueue: set[str] | None = None  # set by enqueue; None = every pending job may allocate
        self.blocked: list[JobInfo] = []  # jobs allocate stopped at, for reserve/backfill
        self.halted = False  # strict order: allocate met a blocked reservable job
        self.share_held = False  # some job was held back by its fair-share slice
        self.surplus = False  # the pie is spun again: fair-share slices no longer limit, caps still do
        self.book: ReservationBook | None = None
        self.reserved: set[str] = set()
        from policies.framework.placement import Placer

        self.placer: Placer = Placer(self, snapshot.evaluations)
        self._plugin_set = take(conf.tiers, conf.hook_timing)
        self.plugins = self._plugin_set.plugins
        self.hooks = self._plugin_set.hooks
        self._hook = self.hooks.dispatchers()
        self.tree_share = self.hooks.tree_share()
        self.hooks.reset_seconds()
        for plugin in self.plugins:
            t0 = perf_counter()
            plugin.on_session_open(self)
            self.hooks.charge(plugin.name, perf_counter() - t0)

    # ---- reasons -------------------------------------------------------------------------------

    def why(self, job: JobInfo, code: str, source: str, message: str) -> None:
        """Record cheaply why ``job`` was not scheduled (the last few distinct reasons)."""
        reasons = self.decisions.reasons.setdefault(job.id, [])
        reason = Reason(code, source, message)
        if reason not in reasons:
            reasons.append(reason)
            del reasons[:-MAX_REASONS]

    def why_queue(self, queue: str, code: str, source: str, message: str) -> None:
        self.decisions.queue_reasons[queue] = Reason(code, source, message)

    def why_tenant(self, queue: str, tenant: str, code: str, source: str, message: str) -> None:
        """Why the tenant's jobs in ``queue`` that a pass went over were not tried (``tenant_held_back``)."""
        self.decisions.tenant_reasons[(queue, tenant)] = Reason(code, source, message)

    # ---- lifecycle -----------------------------------------------------------------------------

    def run(self) -> None:
        """Run the conf's actions in order, timing each."""
        for name in self.conf.actions:
            action = ACTIONS[name](self.conf.action_arguments(name))
            t0 = perf_counter()
            action.execute(self)
            self.decisions.action_seconds[name] = self.decisions.action_seconds.get(name, 0.0) + perf_counter() - t0

    def close(self) -> Decisions:
        for plugin in self.plugins:
            t0 = perf_counter()
            plugin.on_session_close(self)
            self.hooks.charge(plugin.name, perf_counter() - t0)
        self._put_back()
        self.decisions.plugin_seconds = dict(self.hooks.seconds)
        give_back(self._plugin_set)
        return self.decisions


def open_session(conf: SchedulerConf, snapshot: Snapshot, clock: Clock) -> Session:
    """Open a session: build the queue tree, open every plugin of every tier."""
    load_builtins()
    return Session(conf, snapshot, clock)


def close_session(ssn: Session) -> Decisions:
    """Close the plugins, restore the nodes and tasks the session touched, and return its decisions."""
    return ssn.close()
