"""Job-level state on a member cluster, derived from its tasks' backend statuses.

The federation sees jobs, the backend sees tasks: this is where a gang's tasks become one job state
(Running once ``minAvailable`` run, Succeeded when all succeed, Failed on the first failure) and where
the updates the next report carries wait until the federation has accepted them.

An elastic job (``minAvailable`` below its tasks) is launched once its gang is placed; its other tasks
are launched later, as the local session finds room for them (Volcano's gang plugin and allocate), so
a job's ``placed`` tasks grow while it runs, and it ends only when every one of its tasks has ended.
Tasks beyond the gang are the first a preemption takes back (gang ``preemptMode: down-to-min``): the
agent kills just those (``shrinking``), and they wait to be placed again, the job running on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from federation.models import JobSpecBody, JobState
from federation.models.agent_report import PlainRunningJob, PlainStatusUpdate
from federation.models.cluster import Assignment
from member_agent.backends.base import TaskLaunch, TaskPhase, TaskReport, task_id
from policies.clock import Clock


@dataclass
class LocalJob:
    job_id: str
    epoch: int
    queue: str = ""
    tenant: str = ""
    priority: int = 0
    submit_time: float = 0.0
    spec: JobSpecBody | None = None
    tasks: dict[str, TaskReport] = field(default_factory=dict)
    state: JobState = JobState.ADMITTED
    launched: bool = False
    cancel_reason: str | None = None
    admitted_at: float = 0.0
    # (task name, index) of the tasks launched in this epoch and not given back: an elastic job starts
    # with its gang and launches the rest as room allows.
    placed: set[tuple[str, int]] = field(default_factory=set)
    shrinking: set[str] = field(default_factory=set)  # task ids killed to give room back, the job running on
    version: int = 0  # grows with every change to ``tasks`` or ``placed``: what a cached view is keyed on
    phases: Counter[TaskPhase] = field(default_factory=Counter)  # how many of ``tasks`` are in each phase
    started_at: float | None = None  # the earliest start among ``tasks``: the job's start in reports
    _spec_tasks: int = field(default=0, init=False, repr=False, compare=False)

    @property
    def gang_size(self) -> int:
        if self.spec is None:
            return max(1, len(self.tasks))
        return self.spec.gang_size

    @property
    def total_tasks(self) -> int:
        return self._spec_tasks if self.spec is not None else len(self.tasks)

    def __post_init__(self) -> None:
        # A job's spec is set once, when it is admitted; asked of every launched job each round.
        self._spec_tasks = self.spec.total_replicas if self.spec is not None else 0

    def resources(self) -> dict[str, float]:
        """What the job's tasks hold now: those launched and not ended (an elastic job's tasks not yet
        placed hold nothing), each at its task's request."""
        if self.spec is None:
            return {}
        held: dict[str, float] = {}
        for task in self.spec.tasks:
            for index in range(task.replicas):
                key = (task.name, index)
                status = self.tasks.get(task_id(self.job_id, task.name, index))
                if key in self.placed and (status is None or not status.phase.terminal):
                    for name, amount in task.resources.items():
                        held[name] = held.get(name, 0.0) + amount
        return held

    def unplaced(self) -> int:
        """Tasks of the job not launched in this epoch (or given back): an elastic job's to place later."""
        return self.total_tasks - len(self.placed) if self.spec is not None else 0

    def mark_placed(self, keys: list[tuple[str, int]]) -> None:
        """These tasks were launched (with the gang, or later as room allowed)."""
        self.placed.update(keys)
        self.launched = True
        self.version += 1

    def forget(self, status: TaskReport) -> None:
        """A task given back (killed to shrink the job): not launched any more, to be placed again."""
        before = self.tasks.pop(status.task_id, None)
        if before is not None:
            self.phases[before.phase] -= 1
        self.placed.discard((status.task_name, status.index))
        self.shrinking.discard(status.task_id)
        self.version += 1
        self.started_at = min((t.started_at for t in self.tasks.values() if t.started_at is not None), default=None)

    def record(self, status: TaskReport) -> None:
        """Keep ``status`` as its task's latest, and the phase counts with it (a gang of hundreds of
        tasks reports each of them: counting all phases again at each would cost the square)."""
        before = self.tasks.get(status.task_id)
        if before is not None:
            self.phases[before.phase] -= 1
        self.version += 1
        self.tasks[status.task_id] = status
        self.phases[status.phase] += 1
        started = status.started_at
        if before is not None and before.started_at is not None and before.started_at != started:
            # The task's start changed (a backend corrected it): find the earliest again.
            self.started_at = min((t.started_at for t in self.tasks.values() if t.started_at is not None), default=None)
        elif started is not None and (self.started_at is None or started < self.started_at):
            self.started_at = started

    def launches(self, nodes: dict[tuple[str, int], str]) -> list[TaskLaunch]:
        """One TaskLaunch per placed task; ``nodes`` maps (task name, index) to the chosen node."""
        assert self.spec is not None
        launches = []
        for task in self.spec.tasks:
            for index in range(task.replicas):
                node = nodes.get((task.name, index))
                if node is None:
                    continue
                launches.append(
                    TaskLaunch(
                        job_id=self.job_id,
                        task_name=task.name,
                        index=index,
                        epoch=self.epoch,
                        node=node,
                        resources=dict(task.resources),
                        command=tuple(task.command),
                        env={**task.env, "FEDQ_JOB_ID": self.job_id, "FEDQ_TASK_INDEX": str(index)},
                        walltime=self.spec.walltime,
                        runtime=task.runtime,
                        image=task.image,
                        image_pull_policy=task.image_pull_policy,
                        working_dir=task.working_dir,
                        runtime_env=self.spec.runtime_env,
                        placement=self.spec.placement,
                    )
                )
        return launches


class JobTracker:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.jobs: dict[str, LocalJob] = {}
        self._outbox: list[PlainStatusUpdate] = []
        self._running: dict[str, tuple[LocalJob, int, PlainRunningJob]] = {}  # the last report's entries, by version
        # Ids of launched jobs that may have tasks not placed (an elastic job's, or ones given back): a
        # superset of the growing ones, so a round with none does not walk every job held.
        self._partial: set[str] = set()
        self._ended: set[str] = set()  # ids of jobs whose last update ended them here: forgotten once it is taken

    def admit(self, assignment: Assignment) -> LocalJob | None:
        """Take a new assignment; a repeat of one already held is ignored."""
        held = self.jobs.get(assignment.job_id)
        if held is not None and held.epoch >= assignment.epoch:
            return None
        job = LocalJob(
            job_id=assignment.job_id,
            epoch=assignment.epoch,
            queue=assignment.queue,
            tenant=assignment.tenant,
            priority=assignment.priority,
            submit_time=assignment.submit_time,
            spec=assignment.spec,
            admitted_at=self.clock.now(),
        )
        self.jobs[job.job_id] = job
        self._emit(job, JobState.ADMITTED)
        return job

    def adopt(self, statuses: list[TaskReport]) -> None:
        """After a restart: hold the runs the backend still has, so the federation can fence them."""
        for status in statuses:
            job = self.jobs.get(status.job_id)
            if job is None or job.epoch < status.epoch:
                job = LocalJob(job_id=status.job_id, epoch=status.epoch, launched=True, state=JobState.RUNNING)
                self.jobs[status.job_id] = job
            if job.epoch == status.epoch:
                job.record(status)
                job.placed.add((status.task_name, status.index))
                self._partial.add(job.job_id)

    def known(self) -> list[tuple[str, int]]:
        return [(job.job_id, job.epoch) for job in self.jobs.values()]

    def pending(self) -> list[LocalJob]:
        return [
            job
            for job in self.jobs.values()
            if not job.launched and job.cancel_reason is None and job.state is JobState.ADMITTED
        ]

    def growing(self) -> bool:
        """Whether a launched job, still on the cluster and not being stopped, has tasks not yet placed (an
        elastic job's beyond its gang, or ones given back): later sessions place them as room allows."""
        for job_id in list(self._partial):
            job = self.jobs.get(job_id)
            if (
                job is None
                or job.state.terminal
                or job.cancel_reason is not None
                or (job.launched and not job.unplaced())
            ):
                self._partial.discard(job_id)  # for good: only a launch or a task given back makes it partial again
            elif job.launched and job.state in (JobState.ADMITTED, JobState.RUNNING):
                return True
        return False

    def mark_placed(self, job: LocalJob, keys: list[tuple[str, int]]) -> None:
        """These tasks of ``job`` were launched (with the gang, or later as room allowed)."""
        job.mark_placed(keys)
        if job.unplaced():
            self._partial.add(job.job_id)

    def observe(self, status: TaskReport) -> LocalJob | None:
        """Fold one task status into its job; returns the job when it just failed (kill its other tasks)."""
        job = self.jobs.get(status.job_id)
        if job is None or job.epoch != status.epoch or job.state.terminal or job.state is JobState.PENDING:
            return None
        if status.phase is TaskPhase.KILLED and status.task_id in job.shrinking and job.cancel_reason is None:
            job.forget(status)  # given back for room: it waits to be placed again, the job runs on
            self._partial.add(job.job_id)
            return None
        job.record(status)
        if status.phase is TaskPhase.FAILED:
            self._emit(job, JobState.FAILED, status, reason=status.reason or f"task {status.task_id} failed")
            return job
        if status.phase is TaskPhase.KILLED:
            if job.cancel_reason is not None:
                self._emit(job, JobState.CANCELLED, status, reason=job.cancel_reason)
            elif status.reason == "walltime":
                reason = f"task {status.task_id} exceeded its walltime"
                self._emit(job, JobState.FAILED, status, reason=reason, final=True)
                return job
            else:
                self._emit(job, JobState.PENDING, status, reason=f"evicted on this cluster: {status.reason}")
                return job
            return None
        succeeded = job.phases[TaskPhase.SUCCEEDED]
        if succeeded >= job.total_tasks and succeeded == len(job.tasks):  # every task, placed late or not
            self._emit(job, JobState.SUCCEEDED, status, reason="all tasks succeeded")
        elif job.state is JobState.ADMITTED:
            started = job.phases[TaskPhase.RUNNING] + succeeded
            if started >= job.gang_size:
                self._emit(job, JobState.RUNNING, status, reason="gang running")
        return None

    def cancel(self, job: LocalJob, reason: str) -> None:
        """Mark for cancellation; a job never launched is cancelled at once."""
        job.cancel_reason = reason
        if not job.launched and not job.state.terminal:
            self._emit(job, JobState.CANCELLED, reason=reason)

    def hand_back(self, job: LocalJob, reason: str) -> None:
        """Return a job this cluster cannot run to the global queue."""
        self._emit(job, JobState.PENDING, reason=reason)

    def fail(self, job: LocalJob, reason: str) -> None:
        """A job that cannot run for its own reasons (not this cluster's): the federation retries it or ends it."""
        self._emit(job, JobState.FAILED, reason=reason)

    def drop(self, job_id: str) -> LocalJob | None:
        return self.jobs.pop(job_id, None)

    def _emit(
        self, job: LocalJob, state: JobState, status: TaskReport | None = None, reason: str = "", final: bool = False
    ) -> None:
        job.state = state
        if state.terminal or state is JobState.PENDING:
            self._ended.add(job.job_id)
        when = self.clock.now()
        if status is not None:
            when = status.finished_at or status.started_at or when
        self._outbox.append(
            PlainStatusUpdate(
                job_id=job.job_id,
                epoch=job.epoch,
                state=state,
                time=when,
                exit_code=status.exit_code if status is not None else None,
                reason=reason[:1024],
                log_tail=(status.log_tail if status is not None else "")[-4096:],
                final=final,
            )
        )

    def outbox(self) -> list[PlainStatusUpdate]:
        return list(self._outbox)

    def acknowledge(self, sent: int) -> None:
        """The federation took the first ``sent`` updates; forget them, and jobs that are finished."""
        del self._outbox[:sent]
        waiting = {update.job_id for update in self._outbox}
        for job_id in [job_id for job_id in self._ended if job_id not in waiting]:
            self._ended.discard(job_id)
            job = self.jobs.get(job_id)
            if job is not None and (job.state.terminal or job.state is JobState.PENDING):
                del self.jobs[job_id]

    def running(self) -> list[PlainRunningJob]:
        """Every launched job still on the cluster, with its start, what its tasks hold now (an elastic
        job's placed tasks only) and its walltime end (its latest task start's). Each report lists them
        all: a job keeps its entry while none of its tasks changed."""
        known, self._running = self._running, {}
        out = []
        for job in self.jobs.values():
            if not job.launched or job.state.terminal:
                continue
            seen = known.get(job.job_id)
            entry = seen[2] if seen is not None and seen[0] is job and seen[1] == job.version else None
            if entry is None:
                walltime = job.spec.walltime if job.spec is not None else None
                last = max((t.started_at for t in job.tasks.values() if t.started_at is not None), default=None)
                entry = PlainRunningJob(
                    job_id=job.job_id,
                    epoch=job.epoch,
                    resources=job.resources(),
                    started_at=job.started_at,
                    expected_end=None if last is None or walltime is None else last + walltime,
                )
            self._running[job.job_id] = (job, job.version, entry)
            out.append(entry)
        return out
