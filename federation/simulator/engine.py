"""The simulation loop: the real global scheduler and the real member agents on a virtual clock.

A discrete-event loop. Events are job submits, task ends (each simulated backend's next end), and the
moments a plan can change by time alone: a waiting job becomes allowed to reserve (``reservation.after``),
a preemptible run passes reclaim's grace period, an eviction leaves reclaim's per-minute budget. (Usage
decays continuously; it is read at every event, but its decay alone does not make one.) At each event
time, in rounds:

1. submits at that time enter the ``FederationState`` in file order (a job to a queue that does not
   exist or does not take its tenant is Rejected, as the API would refuse it);
2. every member agent observes its backend and reports its job updates, which the federation folds in
   as the report handler does (Running, an end, or a requeue when a run was evicted or handed back);
3. when jobs are pending and the state changed since the last plan, the clusters' capacity reports
   are brought up to date and the global cycle (``GlobalScheduler.plan``, with the ``Accountant``'s
   usage) runs: dispatches become assignments in the cluster's reply, reclaim evictions become
   cancellations, and jobs no cluster could ever hold become Unschedulable;
4. each agent takes its reply and runs its local session, launching on its simulated backend;
5. rounds repeat at the same virtual time until one neither moves a job nor changes the state, so
   start times are exact rather than rounded to a cycle period; then the clock jumps to the next event.

Simulated agents always report, so clusters are never lost (``cluster.lostAfter`` is infinite here).
Nothing reads the wall clock except to measure the run itself.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from time import perf_counter

from federation.accounting import Accountant
from federation.config import FederationConfig
from federation.lifecycle import (
    Assign,
    Cancel,
    ClusterLost,
    DependencyUnmet,
    Dispatch,
    Event,
    Hold,
    IllegalTransition,
    Mark,
    NotAdmitted,
    Outcome,
    Reclaim,
    Release,
    Requeued,
    RetryPolicy,
    RunStarted,
    RunStopped,
    StopOrder,
    submitted,
    transition,
)
from federation.models import JobRecord, JobState, QueueTree
from federation.models.cluster import Assignment, Cancellation, StatusUpdate
from federation.models.dependency import Wait
from federation.scheduler.conf import global_conf
from federation.scheduler.cycle import CyclePlan, GlobalScheduler
from federation.scheduler.marks import marks
from federation.scheduler.state import FederationState
from federation.simulator.member import Member
from federation.simulator.records import EngineStats, JobProgress, SimulationResult, result_of
from federation.simulator.scenario import Scenario, SimAction
from member_agent.local_scheduler import LocalScheduler
from policies import SchedulerConf
from policies.clock import ManualClock

MAX_ROUNDS = 1000  # rounds at one virtual time before the loop is declared stuck
PROGRESS_STEPS = 200
RECLAIM_WINDOW = 60.0  # seconds over which reclaim.maxPerMinute counts evictions

Progress = Callable[[int, int], None]


class SimulationError(RuntimeError):
    """The simulation cannot go on (it would loop at one instant for ever)."""


def simulation_config(policy: FederationConfig, silences: bool = False) -> FederationConfig:
    """The scenario's policy; unless the scenario silences a cluster, clusters never go silent
    (simulated agents always report), so their liveness need not be kept."""
    config = policy.model_copy(deep=True)
    if not silences:
        config.cluster.lost_after = math.inf
        config.cluster.requeue_after = math.inf
    return config


class Engine:
    def __init__(
        self, scenario: Scenario, *, local_conf: SchedulerConf | None = None, progress: Progress | None = None
    ) -> None:
        self.scenario = scenario
        self.clock = ManualClock(0.0)
        self.config = simulation_config(scenario.policy, any(a.kind == "silence" for a in scenario.actions))
        self.scheduler = GlobalScheduler(self.config, self.clock)
        self.retry = RetryPolicy(self.config.jobs.max_retries, self.config.jobs.backoff)
        self.progress = progress
        self.tree = QueueTree(scenario.queues)
        self.state = FederationState()
        self.state.set_queues(self.tree)
        fairshare = self.config.fairshare
        self.accountant = Accountant(self.clock, fairshare.half_life, fairshare.usage_weights)
        self.accountant.queue_half_life = {
            path: node.config.half_life for path, node in self.tree.nodes.items() if node.config.half_life is not None
        }
        self.members: dict[str, Member] = {}
        for cluster in scenario.clusters:
            self.state.set_cluster(cluster.name, cluster.labels, cordoned=False)
            local = LocalScheduler(self.clock, local_conf)  # one per agent, as each real agent has its own
            self.members[cluster.name] = Member(cluster.name, cluster.labels, cluster.nodes, self.clock, local)
        # Internal ids sort in file order: the schedulers break ties between equal submit times by id.
        width = len(str(len(scenario.jobs)))
        self.ids = [f"{n:0{width}d}" for n in range(len(scenario.jobs))]
        self.jobs: dict[str, JobProgress] = {}
        self.finished = 0
        self.stats = EngineStats()
        self._wakeups: list[float] = []
        self._unreported: set[str] = set(self.members)
        self._by_sim_id = {sim.id: self.ids[n] for n, sim in enumerate(scenario.jobs)}
        self._actions = deque(scenario.actions)
        self._silent: set[str] = set()  # clusters whose agents no longer reach the federation
        self._heartbeats = any(a.kind == "silence" for a in scenario.actions)  # liveness is kept
        self._evictions: deque[float] = deque()

    # ---- the loop ----------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        started = perf_counter()
        arrivals = sorted(range(len(self.scenario.jobs)), key=lambda n: self.scenario.jobs[n].submit)
        step = max(1, len(arrivals) // PROGRESS_STEPS)
        shown = 0
        cursor = 0
        while True:
            now = self._next_time(arrivals, cursor)
            if now is None:
                break
            self.clock.set(now)
            self.stats.event_times += 1
            while cursor < len(arrivals) and self.scenario.jobs[arrivals[cursor]].submit <= now:
                self._submit(arrivals[cursor])
                cursor += 1
            self._settle()
            if self._actions and self._actions[0].at <= now:  # after the instant's reports, as the API's
                while self._actions and self._actions[0].at <= now:
                    self._act(self._actions.popleft())
                self._settle()
            if self.progress is not None and self.finished - shown >= step:
                shown = self.finished
                self.progress(self.finished, len(arrivals))
        self._close_unfinished()
        if self.progress is not None:
            self.progress(self.finished, len(arrivals))
        self.stats.wall_seconds = perf_counter() - started
        return self._result()

    def _next_time(self, arrivals: list[int], cursor: int) -> float | None:
        times = [t for m in self.members.values() if (t := m.backend.next_event_time()) is not None]
        if cursor < len(arrivals):
            times.append(self.scenario.jobs[arrivals[cursor]].submit)
        if self._actions:
            times.append(self._actions[0].at)
        now = self.clock.now()
        while self._wakeups and self._wakeups[0] <= now:
            heapq.heappop(self._wakeups)
        if self._wakeups and (len(self.state.pending) or self._silent):
            times.append(self._wakeups[0])
        return min(times) if times else None

    def _settle(self) -> None:
        """Rounds at the current time until a round changes nothing.

        The global plan is a function of the federation state, and applying its own dispatches leaves
        the state its session ended with, so it is planned again only after a change it did not make
        itself: a submit or an end (this event), a job back in the queue, or one found Unschedulable.
        """
        stale = True
        for _ in range(MAX_ROUNDS):
            self.stats.rounds += 1
            for member in self.members.values():
                stale |= self._receive(member)
            if self._heartbeats:  # every report is a heartbeat: the clusters still heard from stay alive
                self._report(self.clock.now())
                stale |= self._requeue_lost()
            stale |= self._unmet_dependencies()
            moved = 0
            if stale and len(self.state.pending):
                moved, stale = self._global_cycle()
            else:
                stale = False
            for member in self.members.values():
                if member.name not in self._silent:  # a silent cluster's reply never reaches its agent
                    member.reply()
                t0 = perf_counter()
                launched = member.schedule()
                if launched is not None:
                    self.stats.local_cycles += 1
                    self.stats.local_seconds += perf_counter() - t0
                    moved += launched
            if not moved and not stale:
                return
        raise SimulationError(f"no steady state after {MAX_ROUNDS} rounds at t={self.clock.now()}")

    # ---- federation side ---------------------------------------------------------------------

    def _submit(self, number: int) -> None:
        sim = self.scenario.jobs[number]
        job_id = self.ids[number]
        # Validated: pydantic's Rust validator fills defaults faster than model_construct, and takes the
        # spec, already a model, as it is.
        record = JobRecord(
            id=job_id,
            name=job_id,
            tenant=sim.tenant,
            queue=sim.spec.queue,
            priority=sim.spec.priority,
            spec=sim.spec,
            after=[Wait(job=self._by_sim_id[str(d.job)], condition=d.condition) for d in sim.depends_on],
            submit_time=sim.submit,
            events=[submitted(sim.submit)],
        )
        job = JobProgress(sim, record)
        self.jobs[job_id] = job
        if not self.tree.may_submit(sim.tenant, sim.spec.queue):
            why = "no such leaf queue" if self.tree.get(sim.spec.queue) is None else "tenant may not submit there"
            self._finish(job, "Rejected", f"queue {sim.spec.queue}: {why}")
            return
        if sim.hold:
            self._move(job, Hold("scenario"))
        self._upsert(job)
        self._may_reserve_from(sim.submit)

    def _report(self, now: float) -> None:
        """Bring the capacity reports of the clusters whose jobs moved up to date (of every cluster
        still heard from, when liveness is kept: its report is its heartbeat)."""
        names = set(self.members) - self._silent if self._heartbeats else self._unreported
        for name in sorted(names):
            self.state.set_report(name, now, self.members[name].capacity())
        self._unreported.clear()

    def _act(self, action: SimAction) -> None:
        """A scenario's action: a cancel, hold or release as the API would make it, or a cluster's agent
        going silent (its runs go on; after ``lostAfter`` it takes no work, after ``requeueAfter`` its
        jobs are requeued, each at the service's next cycle)."""
        if action.kind != "silence":
            job = self.jobs.get(self._by_sim_id[action.target])
            if job is not None and not job.state:
                asked: dict[str, Event] = {
                    "cancel": Cancel("scenario"),
                    "hold": Hold("scenario"),
                    "release": Release("scenario"),
                }
                outcome = self._move(job, asked[action.kind])
                if outcome is not None and outcome.record.state.terminal:
                    self._ended(job)
                elif outcome is not None and outcome.record.state.queued:
                    self._upsert(job)  # held out of the pending jobs, or back among them
            return
        self._silent.add(action.target)  # its report at this instant was its last
        cluster = self.config.cluster
        for after in (cluster.lost_after, cluster.requeue_after):
            self._wake(action.at + after + self.config.cycle_period)

    def _requeue_lost(self) -> bool:
        """As the service does before each cycle: the jobs of clusters silent past ``requeueAfter``, then
        those not admitted within ``admitWithin`` (a silent cluster's: simulated agents admit at once)."""
        now, cluster = self.clock.now(), self.config.cluster
        lost = self.state.lost_clusters(now, cluster.requeue_after)
        moved = self._requeue([(j, ClusterLost(n)) for n in lost for j in sorted(self.state.clusters[n].jobs)])
        late = self.state.not_admitted(now, cluster.admit_within)
        return self._requeue([(j, NotAdmitted(c, cluster.admit_within)) for j, c in late]) or moved

    def _requeue(self, events: list[tuple[str, Event]]) -> bool:
        outcomes = [(self.jobs[job_id], self._move(self.jobs[job_id], event)) for job_id, event in events]
        for job, outcome in outcomes:
            if outcome is not None and outcome.record.state.terminal:
                self._ended(job)
            elif outcome is not None:
                job.start, job.cluster = None, ""
                self._upsert(job)
        return any(outcome is not None for _, outcome in outcomes)

    def _unmet_dependencies(self) -> bool:
        """As the service does each cycle: jobs whose dependency can never be met are Cancelled (or,
        ``jobs.killInvalidDepend`` false, say so and wait)."""
        moved = False
        for job_id, why in self.state.dependencies.take_unmet():
            job = self.jobs[job_id]
            outcome = self._move(job, DependencyUnmet(why, self.config.jobs.kill_invalid_depend))
            moved |= outcome is not None
            if outcome is not None and outcome.record.state.terminal:
                self._ended(job)
            elif outcome is not None:
                self._upsert(job)
        return moved

    def _plan(self) -> CyclePlan:
        """The global cycle on up-to-date capacity reports and the accountant's usage now."""
        self.stats.global_cycles += 1
        now = self.clock.now()
        self._report(now)
        plan = self.scheduler.plan(self.state, self.accountant.usage(now), self._conf(now))
        self.stats.global_seconds += plan.seconds
        return plan

    def _global_cycle(self) -> tuple[int, bool]:
        """Plan and apply; returns the jobs moved and whether the state changed beyond the plan's own doing.

        A cycle that could not act (nothing fits anywhere, nothing to reclaim or mark) is skipped: its
        plan would be empty, and a plan leaves nothing behind for the next one."""
        now = self.clock.now()
        self._report(now)
        if not self.state.may_act(now, self.config.cluster.lost_after):
            self.stats.idle_cycles += 1
            return 0, False
        plan = self._plan()
        for job_id, why in sorted(plan.unschedulable.items()):
            job = self.jobs[job_id]
            self._move(job, Mark(JobState.UNSCHEDULABLE, why))
            self._finish(job, "Unschedulable", why)
        for job_id, cluster in plan.dispatches:
            self._move(self.jobs[job_id], Dispatch(cluster))
            self._upsert(self.jobs[job_id])
            if cluster in self._silent:  # it never hears of the job: requeued after admitWithin
                self._wake(now + self.config.cluster.admit_within + self.config.cycle_period)
        for job_id, mark in marks(plan, self.state):
            if self._move(self.jobs[job_id], mark) is not None:
                self._upsert(self.jobs[job_id])
        for job_id, _cluster, reason in plan.evictions:
            self._move(self.jobs[job_id], Reclaim(reason))
            self._evictions.append(now)
            # The eviction leaves the per-minute budget at the service's first cycle after the minute.
            self._wake(now + RECLAIM_WINDOW + self.config.cycle_period)
        return len(plan.dispatches) + len(plan.evictions), bool(plan.unschedulable)

    def _move(self, job: JobProgress, event: Event) -> Outcome | None:
        """One lifecycle event on the job's record, its effects carried out as the service's would be:
        assignments and stop orders into the cluster's next reply, run starts and stops to the
        accountant. None (nothing done) when the event does not apply, as a stale report would not."""
        now = self.clock.now()
        try:
            outcome = transition(job.record, event, now)
        except IllegalTransition:
            return None
        if outcome is None:
            return None
        job.record = record = outcome.record
        for effect in outcome.effects:
            if isinstance(effect, Assign):
                self.members[effect.cluster].assignments.append(Assignment.of(record))
            elif isinstance(effect, StopOrder):
                self.members[effect.cluster].cancellations.append(
                    Cancellation.model_construct(job_id=record.id, epoch=effect.epoch, reason=effect.reason)
                )
            elif isinstance(effect, RunStarted):
                accountant = self.accountant
                accountant.start(
                    effect.job_id, effect.tenant, effect.queue, effect.cluster, effect.resources, effect.at
                )
            elif isinstance(effect, RunStopped):
                self.accountant.stop(effect.job_id, effect.at)
            elif isinstance(effect, Requeued):
                self._may_reserve_from(now)
                if effect.retry_at is not None:
                    self._wake(effect.retry_at)
        return outcome

    def _conf(self, now: float) -> SchedulerConf | None:
        """As the service does: reclaim may evict only what is left of this minute's allowance."""
        while self._evictions and now - self._evictions[0] > RECLAIM_WINDOW:
            self._evictions.popleft()
        if not self._evictions:
            return None
        budget = max(0, self.config.reclaim.max_per_minute - len(self._evictions))
        return global_conf(self.config, reclaim_budget=budget)

    def _receive(self, member: Member) -> bool:
        """One agent's job updates; True when a job ended or came back to the queue."""
        if member.name in self._silent:
            member.updates()  # the agent goes on observing its runs; its reports never arrive
            return False
        changed = False
        updates = member.updates()
        for update in updates:
            changed |= self._apply(member.name, update)
        if any(update.state is not JobState.ADMITTED for update in updates):
            self._unreported.add(member.name)
        return changed

    def _apply(self, cluster: str, update: StatusUpdate) -> bool:
        """Fold one job update into the federation, as the report handler does; True when the job
        ended or came back to the queue."""
        job = self.jobs.get(update.job_id)
        if job is None or job.state:
            return False
        outcome = self._move(job, update.event(cluster, self.retry))
        if outcome is None:
            return False  # a stale run: the federation has moved the job on
        record = outcome.record
        if record.state is JobState.RUNNING:
            job.start, job.cluster = record.start_time, cluster
            self._upsert(job)
            if record.spec.preemptible and self.config.reclaim.enabled:
                self._wake(update.time + self.config.reclaim.grace)  # from then on reclaim may evict it
            return False
        if record.state is JobState.PENDING:
            job.start, job.cluster = None, ""
            self._upsert(job)
            return True
        if record.state.terminal:
            job.end = record.end_time
            self._ended(job)
            return True
        return False

    def _upsert(self, job: JobProgress) -> None:
        """The state keeps the job's compact form until its attempt changes (a requeue resets its wait)."""
        job.revision += 1
        self.state.upsert_job(job.record, job.revision, b"%d" % job.record.attempt)

    def _may_reserve_from(self, waiting_from: float) -> None:
        """A job may reserve only after waiting ``reservation.after``: that moment can change the plan."""
        if self.config.reservation.after > 0:
            self._wake(waiting_from + self.config.reservation.after)

    def _wake(self, at: float) -> None:
        """A moment when a plan may change without a submit or an end: plan again then (if jobs wait)."""
        heapq.heappush(self._wakeups, at)

    def _ended(self, job: JobProgress) -> None:
        """The job's record reached a terminal state: its outcome, with why unless it succeeded."""
        record = job.record
        self._finish(job, record.state.value, "" if record.state is JobState.SUCCEEDED else record.reason)
        self._upsert(job)  # its end, for the jobs that depend on it (the state keeps only its id and end)

    def _finish(self, job: JobProgress, state: str, reason: str) -> None:
        """The job is done (or was never taken): it leaves the federation's state with its outcome."""
        self.state.remove_job(job.record.id)
        job.state = state
        job.reason = reason
        self.finished += 1

    def _close_unfinished(self) -> None:
        """No event is left but jobs never ran: still queued (a cap below their size, say), or held by a
        cluster that never launched them. They are recorded Unschedulable with why they waited."""
        waiting = sorted(job_id for job_id, job in self.jobs.items() if not job.state)
        if not waiting:
            return
        reasons = self._plan().reasons if len(self.state.pending) else {}
        for job_id in waiting:
            job = self.jobs[job_id]
            known = reasons.get(job_id)
            why = known[-1].message if known else f"dispatched to {job.record.cluster}, never started there"
            if job.record.after and job_id in self.state.blocked:
                why = "its dependencies were never met"
            if job.record.held_by is not None:
                why = f"held by {job.record.held_by}, never released"
            self._finish(job, "Unschedulable", f"still waiting when nothing else could happen: {why}")

    # ---- output ------------------------------------------------------------------------------

    def _result(self) -> SimulationResult:
        runs = {name: member.backend.ended for name, member in self.members.items()}
        return result_of(self.scenario, [self.jobs[job_id] for job_id in self.ids], self.stats, runs)


def simulate(
    scenario: Scenario, *, local_conf: SchedulerConf | None = None, progress: Progress | None = None
) -> SimulationResult:
    """Run a scenario to its end: every job Succeeded, Failed, Rejected or Unschedulable."""
    return Engine(scenario, local_conf=local_conf, progress=progress).run()
