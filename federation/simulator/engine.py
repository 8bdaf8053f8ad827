"""The simulation loop: the real global scheduler and the real member agents on a virtual clock.

A discrete-event loop. Events are job submits, task ends (each simulated backend's next end), and the
moments a plan can change by time alone: a waiting job becomes allowed to reserve (``reservation.after``),
a preemptible run passes reclaim's or preemption's grace, an eviction leaves its per-minute budget. (Usage
decays continuously; it is read at every event, but its decay alone does not make one.) At each event
time, in rounds:

1. submits at that time enter the ``FederationState`` in file order (a job to a queue that does not
   exist or does not take its tenant is Rejected, as the API would refuse it);
2. every member agent observes its backend and reports its job updates, which the federation folds in
   as the report handler does (Running, an end, or a requeue when a run was evicted or handed back);
3. the clusters' capacity reports are brought up to date and the leader takes its turn, the service's
   own (``federation.scheduler.turn``): requeues, dependencies never met, and, when jobs are pending
   and the state changed since the last plan, the global cycle's dispatches, marks and evictions;
   the turn's port here is this engine, which lands each lifecycle event on its records and carries
   its effects (``lifecycle.carry_out``) into its members' mailboxes and the ``Accountant``;
4. each agent takes its reply (the orders outstanding, as the report handler reads them from their
   keys) and runs its local session, launching on its simulated backend;
5. rounds repeat at the same virtual time until one neither moves a job, nor hands an agent a new
   order, nor changes the state, so start times are exact rather than rounded to a cycle period (a
   cancel's stop order is acted on, and the run's end heard of, at its instant); then the clock jumps
   to the next event.

What the output says differently from the store is the output's choice (``records.result_of``): a job
still waiting when nothing else can happen is recorded Unschedulable, with why it waited.

Simulated agents always report, so clusters are never lost (``cluster.lostAfter`` is infinite here).
Nothing reads the wall clock except to measure the run itself.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from time import perf_counter

from federation.accounting import Accountant
from federation.accounting.feed import count
from federation.collector import keep_piled_up
from federation.config import FederationConfig
from federation.jobs import job_record
from federation.lifecycle import (
    Cancel,
    Event,
    Hold,
    IllegalTransition,
    JobState,
    Outcome,
    Release,
    Requeued,
    RetryPolicy,
    RunStarted,
    RunStopped,
    StopOrder,
    carry_out,
    submitted,
    transition,
)
from federation.models import JobRecord, QueueTree
from federation.models.agent_report import UpdateFacts, update_event
from federation.models.cluster import Assignment, Cancellation
from federation.models.dependency import Wait
from federation.reports.source import queue_half_lives
from federation.scheduler.state import FederationState
from federation.scheduler.turn import EVICTION_WINDOW, Turn, TurnResult, run_sync
from federation.simulator.member import Member
from federation.simulator.records import EngineStats, JobProgress, SimulationResult, result_of
from federation.simulator.scenario import Scenario, SimAction
from member_agent.local_scheduler import LocalScheduler
from policies import SchedulerConf
from policies.clock import ManualClock

MAX_ROUNDS = 1000  # rounds at one virtual time before the loop is declared stuck
PROGRESS_STEPS = 200
FREEZE_EVERY = 1000  # finished jobs between two freezes of what the run piled up (``keep_piled_up``)

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
        self.retry = RetryPolicy(self.config.jobs.max_retries, self.config.jobs.backoff)
        self.progress = progress
        self.tree = QueueTree(scenario.queues)
        self.state = FederationState()
        self.state.set_queues(self.tree)
        fairshare = self.config.fairshare
        self.accountant = Accountant(self.clock, fairshare.half_life, fairshare.usage_weights)
        self.accountant.set_queue_half_lives(queue_half_lives(self.tree))
        self.turn = Turn(self.config, self.clock, self.accountant, skip_idle=True)
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
        self._wakeups: list[float] = []  # moments a plan may change by time alone, if jobs wait
        self._retries: list[float] = []  # moments a failed job's backoff ends: it waits again then
        self._unreported: set[str] = set(self.members)
        self._by_sim_id = {sim.id: self.ids[n] for n, sim in enumerate(scenario.jobs)}
        self._actions = deque(scenario.actions)
        self._silent: set[str] = set()  # clusters whose agents no longer reach the federation
        self._heartbeats = any(a.kind == "silence" for a in scenario.actions)  # liveness is kept

    # ---- the loop ----------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        started = perf_counter()
        arrivals = sorted(range(len(self.scenario.jobs)), key=lambda n: self.scenario.jobs[n].submit)
        step = max(1, len(arrivals) // PROGRESS_STEPS)
        shown = frozen = 0
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
            if self.finished - frozen >= FREEZE_EVERY:
                frozen = self.finished
                keep_piled_up()
            if self.progress is not None and self.finished - shown >= step:
                shown = self.finished
                self.progress(self.finished, len(arrivals))
        self._close_unfinished()
        if self.progress is not None:
            self.progress(self.finished, len(arrivals))
        self.stats.wall_seconds = perf_counter() - started
        runs = {name: member.backend.ended for name, member in self.members.items()}
        return result_of(self.scenario, [self.jobs[job_id] for job_id in self.ids], self.stats, runs)

    def _next_time(self, arrivals: list[int], cursor: int) -> float | None:
        times = [t for m in self.members.values() if (t := m.backend.next_event_time()) is not None]
        if cursor < len(arrivals):
            times.append(self.scenario.jobs[arrivals[cursor]].submit)
        if self._actions:
            times.append(self._actions[0].at)
        now = self.clock.now()
        for heap in (self._wakeups, self._retries):
            while heap and heap[0] <= now:
                heapq.heappop(heap)
        if self._wakeups and (len(self.state.pending) or self._silent):
            times.append(self._wakeups[0])
        if self._retries:
            times.append(self._retries[0])
        return min(times) if times else None

    def _settle(self) -> None:
        """Rounds at the current time until a round changes nothing.

        The global plan is a function of the federation state, and applying its own dispatches leaves
        the state its session ended with, so it is planned again only after a change it did not make
        itself: a submit, an end or a wake-up (this event), or a job back in the queue.
        """
        stale = True
        for _ in range(MAX_ROUNDS):
            self.stats.rounds += 1
            for member in self.members.values():
                stale |= self._receive(member)
            now = self.clock.now()
            if stale or self._heartbeats:
                self._report(now)
            moved = self._take_turn(run_sync(self.turn.run(self.state, self, now, changed=stale)))
            stale = False
            for member in self.members.values():
                if member.name not in self._silent:  # a silent cluster's reply never reaches its agent
                    moved += member.reply()
                t0 = perf_counter()
                launched = member.schedule()
                if launched is not None:
                    self.stats.local_cycles += 1
                    self.stats.local_seconds += perf_counter() - t0
                    moved += launched
            if not moved:
                return
        raise SimulationError(f"no steady state after {MAX_ROUNDS} rounds at t={self.clock.now()}")

    def _take_turn(self, turn: TurnResult) -> int:
        """Count the turn and wake when what it did lets a later plan change: a job sent to a silent
        cluster is requeued after ``admitWithin``, an eviction leaves reclaim's budget after its window
        (each at the service's first cycle after). Returns the jobs it moved."""
        now, period = self.clock.now(), self.config.cycle_period
        if turn.idle:
            self.stats.idle_cycles += 1
        if turn.plan is not None:
            self.stats.global_cycles += 1
            self.stats.global_seconds += turn.plan.seconds
        for record in turn.dispatched:
            if record.cluster in self._silent:
                self._wake(now + self.config.cluster.admit_within + period)
        for _ in turn.evicted:
            self._wake(now + EVICTION_WINDOW + period)
        return len(turn.dispatched) + len(turn.evicted)

    # ---- the federation's records: the turn's port, the report handler, the API ---------------

    async def commit(self, events: Sequence[tuple[str, Event]], now: float) -> list[JobRecord]:
        """The turn's port: each event lands on its job's record at once."""
        landed = []
        for job_id, event in events:
            outcome = self._land(self.jobs[job_id], event)
            if outcome is not None:
                landed.append(outcome.record)
        return landed

    def _land(self, job: JobProgress, event: Event) -> Outcome | None:
        """One lifecycle event on the job's record, carried out as a commit to the store would be: the
        record replaced, the federation state told, its effects carried (this engine is their
        ``Carrier``). None (nothing done) when the event does not apply, as a stale report would not."""
        if job.state:
            return None
        try:
            outcome = transition(job.record, event, self.clock.now())
        except IllegalTransition:
            return None
        if outcome is None:
            return None
        job.record = record = outcome.record
        job.revision += 1
        self.state.upsert_job(record, job.revision, b"%d" % record.attempt)
        carry_out(outcome, self)
        if record.state.terminal:
            self._done(job, record.state.value, "" if record.state is JobState.SUCCEEDED else record.reason)
        return outcome

    def assign(self, cluster: str, record: JobRecord) -> None:
        self.members[cluster].assign(Assignment.of(record))

    def unassign(self, cluster: str, record: JobRecord) -> None:
        self.members[cluster].unassign(record.id)

    def stop(self, cluster: str, record: JobRecord, order: StopOrder) -> None:
        cancellation = Cancellation.model_construct(job_id=record.id, epoch=order.epoch, reason=order.reason)
        self.members[cluster].stop(cancellation)

    def drop_stop(self, cluster: str, record: JobRecord) -> None:
        self.members[cluster].drop_stop(record.id)

    def usage(self, change: RunStarted | RunStopped) -> None:
        count(self.accountant, change)

    def requeued(self, record: JobRecord, effect: Requeued) -> None:
        self._may_reserve_from(self.clock.now())
        if effect.retry_at is not None:
            heapq.heappush(self._retries, effect.retry_at)

    def _submit(self, number: int) -> None:
        sim = self.scenario.jobs[number]
        job_id = self.ids[number]
        after = [Wait(job=self._by_sim_id[str(d.job)], condition=d.condition) for d in sim.depends_on]
        history = [submitted(sim.submit)]
        elements = {"array_id": sim.array_id, "array_index": sim.array_index} if sim.array_id else {}
        record = job_record(job_id, job_id, sim.tenant, sim.spec, sim.submit, history, after=after, **elements)
        job = JobProgress(sim, record)
        self.jobs[job_id] = job
        if not self.tree.may_submit(sim.tenant, sim.spec.queue):
            why = "no such leaf queue" if self.tree.get(sim.spec.queue) is None else "tenant may not submit there"
            self._done(job, "Rejected", f"queue {sim.spec.queue}: {why}")
            return
        job.revision += 1
        self.state.upsert_job(record, job.revision, b"%d" % record.attempt)
        if sim.hold:
            self._land(job, Hold("scenario"))
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
            asked: dict[str, Event] = {
                "cancel": Cancel("scenario"),
                "hold": Hold("scenario"),
                "release": Release("scenario"),
            }
            self._land(self.jobs[self._by_sim_id[action.target]], asked[action.kind])
            return
        self._silent.add(action.target)  # its report at this instant was its last
        cluster = self.config.cluster
        for after in (cluster.lost_after, cluster.requeue_after):
            self._wake(action.at + after + self.config.cycle_period)

    def _receive(self, member: Member) -> bool:
        """One agent's job updates, folded in as the report handler does; True when a job ended or came
        back to the queue."""
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

    def _apply(self, cluster: str, update: UpdateFacts) -> bool:
        job = self.jobs.get(update.job_id)
        if job is None:
            return False
        outcome = self._land(job, update_event(update, cluster, self.retry))
        if outcome is None:
            return False  # a stale run: the federation has moved the job on
        record = outcome.record
        if record.state is JobState.RUNNING and record.spec.preemptible:
            for evicting in (self.config.reclaim, self.config.preemption):
                if evicting.enabled:  # from then on reclaim (or preemption) may evict it
                    self._wake(update.time + evicting.grace)
        return record.state.terminal or record.state.queued

    def _may_reserve_from(self, waiting_from: float) -> None:
        """A job may reserve only after waiting ``reservation.after``: that moment can change the plan."""
        if self.config.reservation.after > 0:
            self._wake(waiting_from + self.config.reservation.after)

    def _wake(self, at: float) -> None:
        """A moment when a plan may change without a submit or an end: plan again then (if jobs wait)."""
        heapq.heappush(self._wakeups, at)

    def _done(self, job: JobProgress, state: str, reason: str) -> None:
        """The job's outcome in the output: its terminal state (or Rejected, Unschedulable) and why."""
        job.state = state
        job.reason = reason
        self.finished += 1

    def _close_unfinished(self) -> None:
        """No event is left but jobs never ran: still queued (a cap below their size, say), or held by a
        cluster that never launched them. The output records them Unschedulable (the store would keep
        them waiting): one no cluster could ever hold with the scheduler's mark, the others with why
        they waited."""
        waiting = sorted(job_id for job_id, job in self.jobs.items() if not job.state)
        if not waiting:
            return
        reasons = self.turn.plan(self.state, self.clock.now()).reasons if len(self.state.pending) else {}
        for job_id in waiting:
            job = self.jobs[job_id]
            record = job.record
            if record.state is JobState.UNSCHEDULABLE:
                self._done(job, "Unschedulable", record.reason)
                continue
            known = reasons.get(job_id)
            why = known[-1].message if known else f"dispatched to {record.cluster}, never started there"
            if record.after and job_id in self.state.blocked:
                why = "its dependencies were never met"
            if record.held_by is not None:
                why = f"held by {record.held_by}, never released"
            self._done(job, "Unschedulable", f"still waiting when nothing else could happen: {why}")


def simulate(
    scenario: Scenario, *, local_conf: SchedulerConf | None = None, progress: Progress | None = None
) -> SimulationResult:
    """Run a scenario to its end: every job Succeeded, Failed, Cancelled, Rejected or Unschedulable."""
    return Engine(scenario, local_conf=local_conf, progress=progress).run()
