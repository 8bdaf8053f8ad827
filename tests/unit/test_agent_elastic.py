"""An elastic job on a member agent (a real Agent, LocalScheduler and SimulatedBackend, no HTTP).

Volcano's rule: the job starts when its gang (``minAvailable``, PodGroup ``minMember``) is placed; the
session places its other tasks as room allows (allocate pushes a ready job back, so DRF orders each
further task); those tasks beyond the gang are the first to give room back: Volcano's gang plugin
``PreemptableFn`` offers a job's tasks as victims only while it keeps more than ``minAvailable`` ready
(fedq's gang ``preemptMode: down-to-min``), and the job runs on without them.
"""

from __future__ import annotations

from federation.models import JobRecord, JobSpecBody, JobState, TaskSpec
from federation.models.cluster import Assignment, ClusterReport, ReportReply
from member_agent.agent import Agent
from member_agent.backends.base import NodeView, TaskPhase
from member_agent.backends.simulated import SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock


def _assignment(
    job_id: str, replicas: int, *, min_available: int | None = None, priority: int = 0, runtime: float = 100.0
) -> Assignment:
    spec = JobSpecBody(
        queue="q",
        priority=priority,
        walltime=1000,
        min_available=min_available,
        preemptible=True,
        tasks=[TaskSpec(replicas=replicas, resources={"cpu": 1.0}, runtime=runtime)],
    )
    record = JobRecord(
        id=job_id,
        name=job_id,
        tenant="t",
        queue="q",
        priority=priority,
        spec=spec,
        submit_time=0.0,
        state=JobState.DISPATCHED,
        cluster="c",
        epoch=1,
    )
    return Assignment.of(record)


def _member(cpus: int) -> tuple[ManualClock, SimulatedBackend, Agent]:
    clock = ManualClock(0.0)
    backend = SimulatedBackend([NodeView(f"n{i}", {"cpu": 1.0}) for i in range(cpus)], clock)
    agent = Agent(None, "c", backend, LocalScheduler(clock), clock)
    agent.handle_reply(ClusterReport(nodes=[]), ReportReply())
    return clock, backend, agent


def _assign(agent: Agent, *assignments: Assignment) -> None:
    agent.handle_reply(ClusterReport(nodes=[]), ReportReply(assignments=list(assignments)))


def _running(backend: SimulatedBackend) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in backend.tasks():
        if task.phase is TaskPhase.RUNNING:
            counts[task.job_id] = counts.get(task.job_id, 0) + 1
    return counts


def _states(agent: Agent) -> list[tuple[str, JobState]]:
    return [(u.job_id, u.state) for u in agent.tracker.outbox() if u.state is not JobState.ADMITTED]


def test_an_elastic_job_grows_as_room_allows_and_reports_what_runs() -> None:
    # 4 cpus; E: 6 tasks of 1 cpu, minAvailable 2. It starts with its gang and 2 more (4 run), the
    # other 2 wait, not counted as running: E's report holds 4 cpu, not 6.
    clock, backend, agent = _member(4)
    _assign(agent, _assignment("E", 6, min_available=2))
    assert agent.schedule() == 1
    agent.observe()
    assert _running(backend) == {"E": 4}
    assert [(r.job_id, r.resources) for r in agent.tracker.running()] == [("E", {"cpu": 4.0})]
    assert _states(agent) == [("E", JobState.RUNNING)]
    assert agent.schedule() == 0  # a session ran for E's 2 waiting tasks: no room

    clock.advance(100.0)  # the 4 end: E's last 2 start, each for its own 100 s
    agent.observe()
    assert agent.schedule() == 1
    agent.observe()
    assert _running(backend) == {"E": 2}
    assert [(r.job_id, r.resources, r.expected_end) for r in agent.tracker.running()] == [
        ("E", {"cpu": 2.0}, 1100.0)  # its latest task start (100) + walltime (1000)
    ]
    assert _states(agent) == [("E", JobState.RUNNING)]  # not done: 2 of its tasks still run

    clock.advance(100.0)
    agent.observe()
    assert _states(agent) == [("E", JobState.RUNNING), ("E", JobState.SUCCEEDED)]
    assert agent.schedule() is None  # nothing waits


def test_preemption_takes_the_tasks_beyond_the_gang_first_and_the_job_runs_on() -> None:
    # 4 cpus. E (priority 0, preemptible, 4 tasks, minAvailable 2) runs 4 tasks. H (priority 10, a rigid
    # gang of 2) arrives: the local preempt action evicts for H, and gang down-to-min offers only E's tasks
    # beyond its gang (4 ready - 2 = 2 of them): those 2 are killed, E keeps running on 2 (no hand back to
    # the federation), and H starts in the next session on the room they freed. E's 2 evicted tasks wait,
    # pending, and run again once H ends; E ends when all 4 of its tasks have ended.
    clock, backend, agent = _member(4)
    _assign(agent, _assignment("E", 4, min_available=2, runtime=1000.0))
    assert agent.schedule() == 1
    agent.observe()
    assert _running(backend) == {"E": 4}

    clock.advance(10.0)
    _assign(agent, _assignment("H", 2, priority=10, runtime=50.0))
    assert agent.schedule() == 0  # this session evicts and pipelines H; nothing launched yet
    agent.observe()
    assert _running(backend) == {"E": 2}
    assert agent.tracker.jobs["E"].state is JobState.RUNNING
    assert [(r.job_id, r.resources) for r in agent.tracker.running()] == [("E", {"cpu": 2.0})]

    assert agent.schedule() == 1  # H on the freed room
    agent.observe()
    assert _running(backend) == {"E": 2, "H": 2}
    assert _states(agent) == [("E", JobState.RUNNING), ("H", JobState.RUNNING)]  # E never left

    clock.advance(50.0)  # H ends at 60: E's 2 evicted tasks start again
    agent.observe()
    assert agent.schedule() == 1
    agent.observe()
    assert _running(backend) == {"E": 4}
    clock.advance(1000.0)
    agent.observe()
    assert _states(agent)[-1] == ("E", JobState.SUCCEEDED)


def test_a_rigid_gang_is_not_shrunk() -> None:
    # 2 cpus. R (priority 0, preemptible, a rigid gang of 2) runs; H (priority 10, 1 task) arrives. Down-to-min
    # offers none of R's tasks (it has none beyond its gang): R keeps running, H waits.
    clock, backend, agent = _member(2)
    _assign(agent, _assignment("R", 2, runtime=1000.0))
    assert agent.schedule() == 1
    agent.observe()
    clock.advance(10.0)
    _assign(agent, _assignment("H", 1, priority=10))
    assert agent.schedule() == 0
    agent.observe()
    assert _running(backend) == {"R": 2}
