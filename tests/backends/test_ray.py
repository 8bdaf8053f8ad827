"""The Ray backend against a real local Ray (2 CPUs): commands, exit codes, gangs, kill, walltime, adoption."""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import ray
from ray.util.placement_group import placement_group_table

from member_agent.backends import command_backends
from member_agent.backends.base import Backend, JobRejected, LaunchError, NodeView, TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.ray_backend import NAMESPACE, NODE_ID_LABEL, PREFIX, RayBackend, run_name

pytestmark = pytest.mark.ray

DEADLINE = 20.0


def leftovers() -> tuple[list[str], list[str]]:
    """fedq actors still named, and fedq placement groups not removed, in the shared Ray."""
    actors = [
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["namespace"] == NAMESPACE and a["name"].startswith(PREFIX)
    ]
    groups = [
        g["name"] for g in placement_group_table().values() if g["name"].startswith(PREFIX) and g["state"] != "REMOVED"
    ]
    return actors, groups


def eventually(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout}s: {what}")
        time.sleep(0.05)


def poll_until(
    backend: RayBackend, done: Callable[[list[TaskReport]], bool], timeout: float = DEADLINE
) -> list[TaskReport]:
    """Poll, collecting every event, until ``done`` holds for what has been collected."""
    events: list[TaskReport] = []

    def collected() -> bool:
        events.extend(backend.poll())
        return done(events)

    eventually(collected, "expected task events", timeout)
    return events


def terminal(events: list[TaskReport], count: int = 1) -> bool:
    return sum(e.phase.terminal for e in events) >= count


def alive(pid: int) -> bool:
    """A zombie counts as gone: it runs nothing and only waits to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.fixture
def backend(ray_cluster: str) -> Iterator[RayBackend]:
    """A backend on the shared Ray; afterwards every run is killed and nothing of fedq may be left in Ray."""
    instance = RayBackend(stop_grace=1.0)
    yield instance
    for status in instance.tasks():
        if not status.phase.terminal:
            instance.kill(status.job_id)
    eventually(lambda: not instance.poll() and leftovers() == ([], []), "fedq actors and groups cleaned up")
    instance.close()


@pytest.fixture
def node(backend: RayBackend) -> NodeView:
    [only] = backend.nodes()
    return only


def task(
    node: NodeView, job: str, command: list[str], *, index: int = 0, cpu: float = 1.0, **extra: object
) -> TaskLaunch:
    resources = {"cpu": cpu} if cpu else {}
    return TaskLaunch(job, "main", index, 1, node.name, resources, tuple(command), **extra)  # type: ignore[arg-type]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_speaks_the_backend_protocol(backend: RayBackend) -> None:
    assert isinstance(backend, Backend)


def test_nodes_report_rays_cpus_and_what_a_running_task_uses(backend: RayBackend, node: NodeView) -> None:
    assert node.allocatable["cpu"] == 2.0 and node.allocatable["memory"] > 0
    assert node.labels[NODE_ID_LABEL] == node.name
    assert not any(":" in name or "_group_" in name for name in node.allocatable)
    eventually(lambda: backend.nodes()[0].used.get("cpu") == 0.0, "an idle node")

    backend.launch([task(node, "hold", ["sleep", "60"])])
    eventually(lambda: backend.nodes()[0].used.get("cpu") == 1.0, "one cpu used while the task runs")
    backend.kill("hold")
    backend.poll()
    eventually(lambda: backend.nodes()[0].used.get("cpu") == 0.0, "the cpu freed after the kill")


def test_command_runs_with_its_env_and_exit_0_is_succeeded(backend: RayBackend, node: NodeView, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    code = f"import os, pathlib; pathlib.Path({str(out)!r}).write_text(os.environ['GREETING'])"
    backend.launch([task(node, "ok", python(code), env={"GREETING": "hello from ray"})])
    events = poll_until(backend, terminal)
    assert [e.phase for e in events] == [TaskPhase.RUNNING, TaskPhase.SUCCEEDED]
    done = events[-1]
    assert (done.job_id, done.exit_code, done.node) == ("ok", 0, node.name)
    assert done.started_at is not None and done.finished_at is not None and done.finished_at >= done.started_at
    assert out.read_text() == "hello from ray"


def test_a_task_without_resources_runs_pinned_to_its_node(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "free", ["sh", "-c", "echo no reservation"], cpu=0)])
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.log_tail) == (TaskPhase.SUCCEEDED, "no reservation")


def test_nonzero_exit_is_failed_with_the_code_and_the_last_lines(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "bad", ["sh", "-c", "seq 1 30; echo oops >&2; exit 3"])])
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.exit_code) == (TaskPhase.FAILED, 3)
    assert done.log_tail.splitlines() == [str(i) for i in range(12, 31)] + ["oops"]


def test_a_missing_program_fails_the_task_not_the_launch(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "typo", ["/nonexistent/fedq-program"])])
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.exit_code) == (TaskPhase.FAILED, 127)
    assert "/nonexistent/fedq-program" in done.log_tail


def test_a_gang_starts_together(backend: RayBackend, node: NodeView, tmp_path: Path) -> None:
    """Each member marks its start, then waits for the other's mark: both succeed only if both ran at once."""
    code = (
        "import pathlib, sys, time\n"
        f"d = pathlib.Path({str(tmp_path)!r}); me, other = sys.argv[1], sys.argv[2]\n"
        "(d / me).write_text(str(time.time()))\n"
        "deadline = time.time() + 15\n"
        "while not (d / other).exists():\n"
        "    if time.time() > deadline: sys.exit(1)\n"
        "    time.sleep(0.02)\n"
    )
    gang = [
        task(node, "pair", python(code) + ["a", "b"], index=0),
        task(node, "pair", python(code) + ["b", "a"], index=1),
    ]
    backend.launch(gang)
    events = poll_until(backend, lambda ev: terminal(ev, 2))
    assert sorted((e.index, e.phase) for e in events if e.phase.terminal) == [
        (0, TaskPhase.SUCCEEDED),
        (1, TaskPhase.SUCCEEDED),
    ]
    assert {e.index for e in events if e.phase is TaskPhase.RUNNING} == {0, 1}


def test_a_spread_gang_is_a_strict_spread_group_and_a_packed_one_a_pack_group(
    backend: RayBackend, node: NodeView
) -> None:
    backend.launch([task(node, "spread", ["sleep", "60"], placement="spread")])
    backend.launch([task(node, "packed", ["sleep", "60"])])
    strategies = {
        g["name"]: g["strategy"]
        for g in placement_group_table().values()
        if g["name"].startswith(PREFIX) and g["state"] == "CREATED"
    }
    assert strategies == {run_name("spread", 1, "main", 0): "STRICT_SPREAD", run_name("packed", 1, "main", 0): "PACK"}


def test_ray_holds_a_spread_gang_to_a_node_per_task(node: NodeView, ray_cluster: str) -> None:
    """The local scheduler never puts two tasks of a spread job on one node; were it to, Ray would not
    place the STRICT_SPREAD group on the one node this Ray has, and the launch times out leaving nothing."""
    impatient = RayBackend(launch_timeout=1.5, stop_grace=1.0)
    gang = [task(node, "crowded", ["sleep", "60"], index=i, cpu=0.5, placement="spread") for i in range(2)]
    with pytest.raises(LaunchError, match="not free"):
        impatient.launch(gang)
    impatient.close()
    assert leftovers() == ([], [])


def test_a_gang_bigger_than_the_node_is_refused_and_leaves_nothing(backend: RayBackend, node: NodeView) -> None:
    gang = [task(node, "huge", ["sleep", "60"], index=i) for i in range(3)]
    with pytest.raises(LaunchError, match="more than it has"):
        backend.launch(gang)
    assert backend.tasks() == [] and backend.poll() == []
    assert leftovers() == ([], [])


def test_a_gang_whose_resources_stay_busy_times_out_and_leaves_nothing(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "busy", ["sleep", "60"])])
    impatient = RayBackend(launch_timeout=1.5, stop_grace=1.0)
    gang = [task(node, "waits", ["sleep", "60"], index=i) for i in range(2)]
    started = time.monotonic()
    with pytest.raises(LaunchError, match="not free"):
        impatient.launch(gang)
    assert 1.5 <= time.monotonic() - started < 10.0
    assert [s.job_id for s in impatient.tasks()] == ["busy"]
    impatient.close()
    actors, groups = leftovers()
    assert len(actors) == 1 and len(groups) == 1 and "waits" not in actors[0] + groups[0]


def test_kill_stops_the_whole_process_group(backend: RayBackend, node: NodeView, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"
    backend.launch([task(node, "victim", ["sh", "-c", script])])
    eventually(pids.exists, "the task wrote its pids")
    shell, child = (int(p) for p in pids.read_text().split())
    assert alive(shell) and alive(child)

    backend.kill("victim", reason="preempted")
    [killed] = [s for s in backend.poll() if s.phase.terminal]
    assert (killed.phase, killed.reason) == (TaskPhase.KILLED, "preempted")
    eventually(lambda: not alive(shell) and not alive(child), "shell and its child gone")
    assert backend.tasks() == []


def test_an_elastic_jobs_later_tasks_start_in_a_group_of_their_own_and_can_be_killed_alone(
    backend: RayBackend, node: NodeView
) -> None:
    """An elastic job's gang starts first; a later launch of more of its tasks (same job and epoch, as
    the agent places them when room allows) reserves a placement group of its own, so the gang's group
    is never resized. A down-to-min shrink (``kill(tasks=...)``) stops only the tasks named."""
    backend.launch([task(node, "elastic", ["sleep", "60"], index=0)])
    backend.launch([task(node, "elastic", ["sleep", "60"], index=1)])
    events = poll_until(backend, lambda ev: {e.index for e in ev if e.phase is TaskPhase.RUNNING} == {0, 1})
    assert {e.job_id for e in events} == {"elastic"}
    groups = [g for g in placement_group_table().values() if g["name"].startswith(PREFIX) and g["state"] != "REMOVED"]
    assert sorted(g["name"] for g in groups) == [run_name("elastic", 1, "main", 0), run_name("elastic", 1, "main", 1)]
    eventually(lambda: backend.nodes()[0].used.get("cpu") == 2.0, "both tasks hold their cpu")

    backend.kill("elastic", 1, "preempted", tasks=["elastic/main-1"])
    [killed] = [s for s in backend.poll() if s.phase.terminal]
    assert (killed.index, killed.phase, killed.reason) == (1, TaskPhase.KILLED, "preempted")
    assert [(s.index, s.phase) for s in backend.tasks()] == [(0, TaskPhase.RUNNING)]
    eventually(lambda: backend.nodes()[0].used.get("cpu") == 1.0, "the killed task's group removed, its cpu freed")


def test_walltime_kills_an_overrunning_task(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "slow", ["sh", "-c", "echo started; exec sleep 60"], walltime=1.0)])
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.reason, done.log_tail) == (TaskPhase.KILLED, "walltime", "started")
    assert done.finished_at is not None and done.started_at is not None
    assert 1.0 <= done.finished_at - done.started_at < 10.0


def test_a_second_backend_adopts_and_can_kill_the_first_ones_runs(
    backend: RayBackend, node: NodeView, tmp_path: Path
) -> None:
    """What a restarted agent does to fence a stale run: find it by name in Ray, then kill it."""
    pid_file = tmp_path / "pid"
    backend.launch(
        [task(node, "stale", ["sh", "-c", f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 300"])]
    )
    eventually(pid_file.exists, "the task wrote its pid")
    pid = int(pid_file.read_text())

    restarted = RayBackend(stop_grace=1.0)
    [seen] = restarted.tasks()
    assert (seen.job_id, seen.epoch, seen.index, seen.phase, seen.node) == ("stale", 1, 0, TaskPhase.RUNNING, node.name)
    restarted.kill("stale", epoch=1, reason="fenced")
    [fenced] = [s for s in restarted.poll() if s.phase.terminal]
    assert (fenced.phase, fenced.reason) == (TaskPhase.KILLED, "fenced")
    eventually(lambda: not alive(pid), "the stale process gone")
    assert terminal(poll_until(backend, terminal))
    restarted.close()


def test_a_run_that_ends_before_its_launch_looks_is_reported_started_then_ended_and_freed(
    backend: RayBackend, node: NodeView, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short command on a busy machine can end before launch reads its first status."""
    handles: list[object] = []
    create = backend._create_actor
    real_get = ray.get

    def created(*args: object) -> object:
        handles.append(create(*args))  # type: ignore[arg-type]
        return handles[-1]

    def status_once_ended(_refs: object, timeout: float | None = None) -> list[dict[str, object]]:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            states = real_get([h.status.remote() for h in handles], timeout=timeout)  # type: ignore[attr-defined]
            if all(TaskPhase(state["phase"]).terminal for state in states):
                return states  # type: ignore[no-any-return]
            time.sleep(0.05)
        pytest.fail("the command did not end")

    monkeypatch.setattr(backend, "_create_actor", created)
    monkeypatch.setattr(ray, "get", status_once_ended)
    backend.launch([task(node, "quick", ["true"])])
    monkeypatch.setattr(ray, "get", real_get)

    events = poll_until(backend, terminal)
    assert [e.phase for e in events] == [TaskPhase.RUNNING, TaskPhase.SUCCEEDED]
    assert events[-1].exit_code == 0 and events[-1].finished_at is not None
    eventually(lambda: backend.tasks() == [], "the ended run's actor freed, not adopted again")


def test_a_run_is_launched_at_most_once_per_epoch(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "once", ["sleep", "60"])])
    with pytest.raises(LaunchError, match="already launched"):
        backend.launch([task(node, "once", ["sleep", "60"])])
    with pytest.raises(LaunchError, match="unknown or dead"):
        backend.launch([TaskLaunch("lost", "main", 0, 1, "no-such-node", {"cpu": 1.0}, ("true",))])
    with pytest.raises(JobRejected, match="no command"):  # the job's fault: its agent fails it at once
        backend.launch([TaskLaunch("empty", "main", 0, 1, node.name, {"cpu": 1.0})])
    assert backend.name in command_backends()  # so the federation refuses such a job at submit


def test_a_restarted_backend_learns_how_a_run_ended_while_no_one_polled(
    backend: RayBackend, node: NodeView, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    backend.launch([task(node, "ended", ["sh", "-c", f"echo finished; touch {marker}"])])
    eventually(marker.exists, "the command ran")

    restarted = RayBackend(stop_grace=1.0)
    [ended] = [s for s in poll_until(restarted, terminal) if s.phase.terminal]
    assert (ended.job_id, ended.phase, ended.exit_code, ended.log_tail) == ("ended", TaskPhase.SUCCEEDED, 0, "finished")
    assert restarted.tasks() == []
    restarted.close()


def test_waits_are_renewed_while_a_run_outlasts_them(backend: RayBackend, node: NodeView) -> None:
    backend.launch([task(node, "outlasts", ["sh", "-c", "sleep 1; echo slept"])])
    short_waits = RayBackend(stop_grace=1.0, wait_round=0.1)
    events = [e for e in poll_until(short_waits, terminal) if e.job_id == "outlasts"]
    assert [(e.phase, e.log_tail) for e in events] == [(TaskPhase.SUCCEEDED, "slept")]
    short_waits.close()


AGENT = """
import sys, time
from member_agent.backends.base import TaskLaunch
from member_agent.backends.ray_backend import RayBackend

address, pid_file = sys.argv[1], sys.argv[2]
backend = RayBackend(address=address)
node = backend.nodes()[0].name
script = f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 300"
backend.launch([TaskLaunch("orphan", "main", 0, 7, node, {"cpu": 1.0}, ("sh", "-c", script))])
time.sleep(300)
"""


def driver_is_dead(pid: int) -> bool:
    """Ray has ended the job of the driver with this pid (what frees a dead driver's non-detached work)."""
    return any(job["DriverPid"] == pid and job["IsDead"] for job in ray._private.state.jobs())


def test_runs_of_an_agent_killed_with_sigkill_survive_and_can_be_fenced(
    backend: RayBackend, node: NodeView, tmp_path: Path
) -> None:
    """The agent process dies hard; its run keeps going in Ray until the next agent kills the stale epoch."""
    pid_file = tmp_path / "pid"
    address = ray.get_runtime_context().gcs_address
    agent = subprocess.Popen([sys.executable, "-c", AGENT, address, str(pid_file)])
    try:
        eventually(lambda: pid_file.exists() or agent.poll() is not None, "the old agent launched its task", 60.0)
        assert agent.poll() is None, "the old agent exited before launching"
    finally:
        agent.kill()
        agent.wait()
    eventually(lambda: driver_is_dead(agent.pid), "Ray noticed the old agent's death", 60.0)
    pid = int(pid_file.read_text())
    assert alive(pid)

    [stale] = backend.tasks()
    assert (stale.job_id, stale.epoch, stale.phase) == ("orphan", 7, TaskPhase.RUNNING)
    backend.kill("orphan", epoch=7, reason="fenced")
    [fenced] = [s for s in backend.poll() if s.phase.terminal]
    assert (fenced.phase, fenced.reason) == (TaskPhase.KILLED, "fenced")
    eventually(lambda: not alive(pid), "the stale run's process gone")


def test_a_runtime_env_gives_the_task_its_env_vars(backend: RayBackend, node: NodeView) -> None:
    launch = task(node, "renv", ["sh", "-c", 'echo "stage=$STAGE"'], runtime_env={"env_vars": {"STAGE": "two"}})
    backend.launch([launch])
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.log_tail) == (TaskPhase.SUCCEEDED, "stage=two")


def test_a_runtime_env_working_dir_runs_a_script_shipped_from_it(
    backend: RayBackend, node: NodeView, tmp_path: Path
) -> None:
    # A job's code lives where the cluster can fetch it: here a zip on a filesystem every node mounts.
    archive = tmp_path / "code.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(
            "code/step.py", "import os\nprint('ran', os.path.basename(__file__), 'in', os.getcwd() != '/')\n"
        )
    launch = task(node, "wdir", [sys.executable, "step.py"], runtime_env={"working_dir": archive.as_uri()})
    backend.launch([launch])  # Ray unpacks the archive and starts the actor inside it
    done = poll_until(backend, terminal)[-1]
    assert (done.phase, done.log_tail) == (TaskPhase.SUCCEEDED, "ran step.py in True")


def test_a_run_dies_with_its_runner_when_the_worker_is_killed(
    backend: RayBackend, node: NodeView, tmp_path: Path
) -> None:
    # A head or node going away SIGKILLs the runner's worker; its command must not run on unowned.
    pid_file = tmp_path / "pid"
    backend.launch([task(node, "orphan", ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"])])
    eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the command started")
    pid = int(pid_file.read_text())
    ray.kill(ray.get_actor(run_name("orphan", 1, "main", 0), namespace=NAMESPACE), no_restart=True)
    eventually(lambda: not alive(pid), "the command killed with its runner")
    done = poll_until(backend, terminal)[-1]
    assert done.phase is TaskPhase.FAILED and done.reason.startswith("lost: the task's Ray actor died")
