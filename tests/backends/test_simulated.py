"""The simulated backend: virtual runtime and walltime, capacity, kill, next event, and no over-allocation."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from federation.models import JobSpecBody, TaskSpec
from member_agent.backends.base import Backend, LaunchError, NodeView, TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.simulated import SimulatedBackend, nodes_from_groups
from member_agent.capacity import ShapeSummary, summarise
from member_agent.local_scheduler import LocalPlan, LocalScheduler
from member_agent.node_table import node_info
from member_agent.tracker import LocalJob
from policies import resources as res
from policies.clock import ManualClock

GiB = 2.0**30
START = 1_000.0


def two_nodes(clock: ManualClock) -> SimulatedBackend:
    nodes = [NodeView("a", {"cpu": 4.0, "memory": 8 * GiB}), NodeView("b", {"cpu": 2.0, "memory": 4 * GiB})]
    return SimulatedBackend(nodes, clock)


def task(
    job: str,
    node: str = "a",
    cpu: float = 1.0,
    *,
    index: int = 0,
    epoch: int = 1,
    runtime: float | None = 10.0,
    walltime: float | None = None,
) -> TaskLaunch:
    return TaskLaunch(
        job_id=job,
        task_name="main",
        index=index,
        epoch=epoch,
        node=node,
        resources={"cpu": cpu},
        runtime=runtime,
        walltime=walltime,
    )


def used(backend: SimulatedBackend, node: str, resource: str = "cpu") -> float:
    return next(n for n in backend.nodes() if n.name == node).used.get(resource, 0.0)


def by_job(statuses: list[TaskReport]) -> dict[str, TaskReport]:
    return {s.job_id: s for s in statuses}


def test_speaks_the_backend_protocol() -> None:
    assert isinstance(two_nodes(ManualClock()), Backend)


def test_from_config_expands_groups_and_parses_quantities() -> None:
    config = {
        "nodes": [
            {"count": 2, "resources": {"cpu": "8", "memory": "32Gi"}, "labels": {"zone": "x"}, "namePrefix": "cpu"},
            {"count": 1, "resources": {"cpu": 4, "nvidia.com/gpu": 2}, "namePrefix": "gpu"},
            {"count": 1, "resources": {"cpu": "500m"}, "namePrefix": "cpu", "unschedulable": True},
        ],
        "defaultRuntime": "2m",
    }
    clock = ManualClock(START)
    backend = SimulatedBackend.from_config(config, clock)
    nodes = {n.name: n for n in backend.nodes()}
    assert sorted(nodes) == ["cpu-0", "cpu-1", "cpu-2", "gpu-0"]
    assert nodes["cpu-1"].allocatable == {"cpu": 8.0, "memory": 32 * GiB}
    assert nodes["cpu-0"].labels == {"zone": "x"}
    assert nodes["gpu-0"].allocatable["nvidia.com/gpu"] == 2.0
    assert nodes["cpu-2"].allocatable == {"cpu": 0.5} and nodes["cpu-2"].unschedulable
    backend.launch([task("j", "cpu-0", runtime=None)])
    assert backend.next_event_time() == START + 120.0


@pytest.mark.parametrize(
    "groups, message",
    [
        ([{"count": -1, "resources": {"cpu": 1}}], "count"),
        ([{"count": 1, "resources": {"cpu": "lots"}}], "cpu"),
        ([{"count": 1, "resources": {"cpu": 1}, "colour": "red"}], "colour"),
        ("not a list", "list"),
    ],
)
def test_bad_node_groups_are_refused_with_a_clear_message(groups: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        nodes_from_groups(groups)  # type: ignore[arg-type]


def test_task_runs_for_its_runtime_on_the_injected_clock() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("j1", runtime=30.0)])
    [started] = backend.poll()
    assert (started.phase, started.started_at, started.node) == (TaskPhase.RUNNING, START, "a")
    assert used(backend, "a") == 1.0

    clock.advance(29.5)
    assert backend.poll() == []
    assert backend.tasks()[0].phase is TaskPhase.RUNNING

    clock.advance(100.0)
    [done] = backend.poll()
    assert (done.phase, done.exit_code, done.finished_at) == (TaskPhase.SUCCEEDED, 0, START + 30.0)
    assert backend.tasks() == []
    assert backend.poll() == []
    assert used(backend, "a") == 0.0


def test_task_over_its_walltime_is_killed_at_start_plus_walltime() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("over", runtime=50.0, walltime=20.0), task("within", "b", runtime=20.0, walltime=20.0)])
    clock.advance(60.0)
    ended = by_job([s for s in backend.poll() if s.phase.terminal])
    assert (ended["over"].phase, ended["over"].reason, ended["over"].finished_at) == (
        TaskPhase.KILLED,
        "walltime",
        START + 20.0,
    )
    assert (ended["within"].phase, ended["within"].finished_at) == (TaskPhase.SUCCEEDED, START + 20.0)


def test_without_runtime_a_task_runs_its_walltime_else_the_default() -> None:
    clock = ManualClock(START)
    backend = SimulatedBackend([NodeView("a", {"cpu": 4.0})], clock, default_runtime=7.0)
    backend.launch([task("wall", runtime=None, walltime=40.0), task("default", runtime=None)])
    clock.advance(100.0)
    ended = by_job([s for s in backend.poll() if s.phase.terminal])
    assert (ended["wall"].phase, ended["wall"].finished_at) == (TaskPhase.SUCCEEDED, START + 40.0)
    assert (ended["default"].phase, ended["default"].finished_at) == (TaskPhase.SUCCEEDED, START + 7.0)


def test_poll_reports_changes_oldest_first_even_when_polled_late() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("short", runtime=5.0)])
    clock.advance(10.0)
    backend.launch([task("late", runtime=5.0)])
    events = [(s.job_id, s.phase) for s in backend.poll()]
    assert events == [
        ("short", TaskPhase.RUNNING),
        ("short", TaskPhase.SUCCEEDED),
        ("late", TaskPhase.RUNNING),
    ]


def test_launch_refuses_over_allocation_and_starts_nothing_of_the_gang() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("busy", "a", cpu=3.0)])
    backend.poll()
    gang = [task("g", "b", cpu=1.0, index=0), task("g", "a", cpu=1.0, index=1), task("g", "a", cpu=1.0, index=2)]
    with pytest.raises(LaunchError, match="'a'"):
        backend.launch(gang)
    assert backend.poll() == []
    assert {s.job_id for s in backend.tasks()} == {"busy"}
    assert (used(backend, "a"), used(backend, "b")) == (3.0, 0.0)
    with pytest.raises(LaunchError, match="unknown node"):
        backend.launch([task("x", "nowhere")])
    with pytest.raises(LaunchError):
        backend.launch([TaskLaunch("gpu", "main", 0, 1, "a", {"nvidia.com/gpu": 1.0}, runtime=1.0)])


def test_a_run_is_launched_at_most_once_per_epoch_until_its_end_is_polled() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("j", runtime=1.0)])
    clock.advance(5.0)
    [ended] = backend.tasks()
    assert ended.phase is TaskPhase.SUCCEEDED
    with pytest.raises(LaunchError, match="already launched"):
        backend.launch([task("j", runtime=1.0)])
    backend.poll()
    assert backend.tasks() == []
    backend.launch([task("j", runtime=1.0, epoch=2)])
    with pytest.raises(LaunchError, match="already launched"):
        backend.launch([task("k", index=0), task("k", index=0)])


def test_kill_frees_capacity_at_once_and_reports_killed() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("big", "a", cpu=4.0, runtime=100.0)])
    with pytest.raises(LaunchError):
        backend.launch([task("next", "a", cpu=2.0)])
    clock.advance(3.0)
    backend.kill("big", reason="preempted")
    assert used(backend, "a") == 0.0
    backend.launch([task("next", "a", cpu=2.0)])
    killed = by_job(backend.poll())["big"]
    assert (killed.phase, killed.reason, killed.finished_at) == (TaskPhase.KILLED, "preempted", START + 3.0)
    clock.advance(200.0)
    assert [(s.job_id, s.phase) for s in backend.poll()] == [("next", TaskPhase.SUCCEEDED)]


def test_a_forgotten_killed_run_does_not_end_its_relaunch() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("j", runtime=100.0)])
    backend.kill("j")
    assert [s.phase for s in backend.poll()] == [TaskPhase.RUNNING, TaskPhase.KILLED]
    backend.launch([task("j", runtime=200.0)])
    assert backend.next_event_time() == START + 200.0
    clock.advance(150.0)
    assert [s.phase for s in backend.tasks()] == [TaskPhase.RUNNING]
    assert used(backend, "a") == 1.0


def test_kill_of_one_epoch_leaves_the_others_running() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    backend.launch([task("j", epoch=1, runtime=50.0)])
    backend.launch([task("j", epoch=2, runtime=50.0)])
    backend.kill("j", epoch=1, reason="fenced")
    phases = {s.epoch: (s.phase, s.reason) for s in backend.tasks()}
    assert phases == {1: (TaskPhase.KILLED, "fenced"), 2: (TaskPhase.RUNNING, "")}
    backend.kill("j")
    assert {s.phase for s in backend.tasks()} == {TaskPhase.KILLED}
    backend.kill("unknown-job")


def test_next_event_time_is_the_earliest_running_end() -> None:
    clock = ManualClock(START)
    backend = two_nodes(clock)
    assert backend.next_event_time() is None
    backend.launch([task("slow", runtime=30.0), task("fast", "b", runtime=10.0)])
    backend.launch([task("capped", runtime=90.0, walltime=20.0)])
    assert backend.next_event_time() == START + 10.0
    backend.kill("fast")
    assert backend.next_event_time() == START + 20.0
    next_time = backend.next_event_time()
    assert next_time is not None
    clock.set(next_time)
    assert [(s.job_id, s.reason) for s in backend.poll() if s.phase.terminal] == [
        ("fast", "cancelled"),
        ("capped", "walltime"),
    ]
    assert backend.next_event_time() == START + 30.0
    clock.advance(10.0)
    backend.advance()
    assert backend.next_event_time() is None


NODES = [
    NodeView(f"n{i}", {"cpu": float(cpu), "memory": mem * GiB})
    for i, (cpu, mem) in enumerate([(4, 8), (2, 2), (2, 2), (4, 8)])
]


def probe(job: str, replicas: int, cpu: float, gib: float) -> LocalJob:
    """A job waiting on the cluster, for comparing local plans."""
    task = TaskSpec(replicas=replicas, resources={"cpu": cpu, "memory": gib * GiB})
    return LocalJob(job, 1, queue="default", spec=JobSpecBody(queue="default", tasks=[task]))


def outcome(plan: LocalPlan) -> tuple[object, ...]:
    return [(job.job_id, placement) for job, placement in plan.launches], plan.reasons


class NeverOverAllocates(RuleBasedStateMachine):
    """Random launches, kills and clock moves: usage always equals the running tasks, and fits."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(START)
        self.backend = SimulatedBackend(NODES, self.clock)
        self.launched: dict[tuple[str, int], TaskLaunch] = {}
        self.jobs = 0
        self.summary = ShapeSummary()
        self.scheduler = LocalScheduler(self.clock)

    def running_usage(self) -> dict[str, dict[str, float]]:
        usage: dict[str, dict[str, float]] = {n.name: {} for n in NODES}
        for status in self.backend.tasks():
            if status.phase is TaskPhase.RUNNING:
                launch = self.launched[(status.task_id, status.epoch)]
                for name, amount in launch.resources.items():
                    usage[launch.node][name] = usage[launch.node].get(name, 0.0) + amount
        return usage

    @rule(
        shapes=st.lists(
            st.tuples(st.sampled_from([n.name for n in NODES]), st.integers(0, 6), st.integers(0, 5)),
            min_size=1,
            max_size=4,
        ),
        runtime=st.integers(0, 40),
        walltime=st.none() | st.integers(0, 40),
    )
    def launch(self, shapes: list[tuple[str, int, int]], runtime: int, walltime: int | None) -> None:
        self.jobs += 1
        job = f"j{self.jobs}"
        gang = [
            TaskLaunch(job, "t", i, 1, node, {"cpu": half_cpus / 2, "memory": gib * GiB}, (), {}, walltime, runtime)
            for i, (node, half_cpus, gib) in enumerate(shapes)
        ]
        usage = self.running_usage()
        for launch in gang:
            for name, amount in launch.resources.items():
                usage[launch.node][name] = usage[launch.node].get(name, 0.0) + amount
        should_fit = all(usage[n.name].get(name, 0.0) <= cap for n in NODES for name, cap in n.allocatable.items())
        try:
            self.backend.launch(gang)
        except LaunchError:
            assert not should_fit
        else:
            assert should_fit
            self.launched.update({(t.task_id, t.epoch): t for t in gang})

    @precondition(lambda self: self.jobs > 0)
    @rule(data=st.data())
    def kill(self, data: st.DataObject) -> None:
        self.backend.kill(f"j{data.draw(st.integers(1, self.jobs))}")

    @rule(seconds=st.integers(0, 30))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def jump_to_next_event(self) -> None:
        next_time = self.backend.next_event_time()
        if next_time is not None:
            self.clock.set(next_time)

    @invariant()
    def usage_is_the_running_tasks_and_within_capacity(self) -> None:
        expected = self.running_usage()
        for node in self.backend.nodes():
            for name, cap in node.allocatable.items():
                assert node.used.get(name, 0.0) == pytest.approx(expected[node.name].get(name, 0.0))
                assert node.used.get(name, 0.0) <= cap

    @invariant()
    def what_is_remembered_of_each_node_matches_a_rebuild(self) -> None:
        views = self.backend.nodes()
        assert self.summary(views) == summarise(views, 0)
        kept = self.scheduler.nodes.update(views)
        fresh = [node_info(view) for view in views]
        facts = lambda n: (n.name, n.allocatable, n.idle, n.used, n.labels, n.unschedulable)  # noqa: E731
        assert [facts(n) for n in kept] == [facts(n) for n in fresh]
        schedulable = [n for n in fresh if not n.unschedulable]
        assert self.scheduler.nodes.capacity() == res.total(n.allocatable for n in schedulable)

    @invariant()
    def a_plan_over_kept_nodes_and_judgements_matches_a_fresh_scheduler(self) -> None:
        views = self.backend.nodes()
        waiting = [probe("p1", 1, 0.5, 1), probe("p2", 2, 1.5, 0), probe("p3", 1, 3.0, 4)]
        kept = self.scheduler.plan(waiting, [], views)
        assert outcome(kept) == outcome(LocalScheduler(self.clock).plan(waiting, [], views))

    @rule()
    def poll(self) -> None:
        for status in self.backend.poll():
            self.check_timing(status, current=False)

    @invariant()
    def every_task_ends_exactly_when_its_runtime_or_walltime_is_up(self) -> None:
        for status in self.backend.tasks():
            self.check_timing(status, current=True)

    def check_timing(self, status: TaskReport, current: bool) -> None:
        """Ended runs ended on time; a run still running now (not an old event) is not yet due."""
        launch = self.launched[(status.task_id, status.epoch)]
        assert status.started_at is not None and launch.runtime is not None
        capped = launch.walltime is not None and launch.runtime > launch.walltime
        end = status.started_at + (launch.walltime if capped and launch.walltime is not None else launch.runtime)
        if status.phase is TaskPhase.RUNNING:
            assert end > self.clock.now() or not current
        elif status.reason != "cancelled":
            expected = TaskPhase.KILLED if capped else TaskPhase.SUCCEEDED
            assert (status.phase, status.finished_at) == (expected, end)


NeverOverAllocates.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_never_over_allocates = NeverOverAllocates.TestCase
