"""``BackendProcess``: a backend in a child process that the agent outlives. Calls and their errors pass
through; while the child is gone the agent sees no nodes and launches wait; a new child is started
after ``retry_after``, and each run the old child knew that the new one cannot find is reported
killed by the cluster (the tracker hands such a job back: Pending, not a retry)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from member_agent.backends.base import LaunchError, TaskLaunch, TaskPhase
from member_agent.backends.isolated import BackendProcess, BackendUnavailable
from policies.clock import ManualClock

TARGET = "tests.backends.file_backend:FileBackend"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000.0)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs.json"


@pytest.fixture
def backend(runs: Path, clock: ManualClock) -> Iterator[BackendProcess]:
    proxy = BackendProcess("file", TARGET, {"path": str(runs)}, clock, retry_after=5.0)
    yield proxy
    proxy.close()


def launch(job: str, index: int = 0) -> TaskLaunch:
    return TaskLaunch(job, "main", index, 1, "n1", {"cpu": 1.0}, ("true",))


def test_calls_and_their_errors_pass_through(backend: BackendProcess) -> None:
    backend.launch([launch("a")])
    assert [n.used for n in backend.nodes()] == [{"cpu": 1.0}]
    assert [(t.job_id, t.phase) for t in backend.tasks()] == [("a", TaskPhase.RUNNING)]
    with pytest.raises(LaunchError, match="refused by the file backend"):
        backend.launch([launch("refused")])


def test_a_crashed_backend_is_replaced_and_what_it_lost_is_reported_killed(
    backend: BackendProcess, runs: Path, clock: ManualClock
) -> None:
    backend.launch([launch("kept"), launch("gone")])
    assert len(backend.tasks()) == 2
    backend.kill("crash")  # the child ends itself, as Ray's driver does when its head restarts
    assert backend.nodes() == []  # away: no capacity, so the federation sends nothing here
    with pytest.raises(BackendUnavailable):
        backend.launch([launch("new")])
    runs.write_text(json.dumps([["kept", "main", 0, 1]]))  # the cluster kept one run, lost the other
    clock.advance(5.0)
    assert [n.name for n in backend.nodes()] == ["n1"]  # a new child, back after retry_after
    [lost] = backend.poll()
    assert (lost.job_id, lost.phase, lost.finished_at) == ("gone", TaskPhase.KILLED, 1_005.0)
    assert lost.reason.startswith("lost: the file cluster lost this run")
    assert backend.poll() == []  # reported once
    assert [t.job_id for t in backend.tasks()] == ["kept"]


def test_a_child_that_cannot_start_is_retried_not_fatal(tmp_path: Path, clock: ManualClock) -> None:
    proxy = BackendProcess("file", TARGET, {}, clock, retry_after=5.0)  # no path: from_config raises
    try:
        assert proxy.nodes() == [] and proxy.poll() == []
        clock.advance(5.0)
        assert proxy.nodes() == []  # tried again, still failing, still answering
    finally:
        proxy.close()
