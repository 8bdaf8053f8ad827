"""``fedq jobs``, ``fedq job`` and ``fedq explain`` tables: local ISO times with how far they are from
the command's ``now``, durations like ``1h20m`` and resources as Kubernetes quantities."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from federation.cli import jobs as cli_jobs
from federation.jobs import expand
from federation.models import JobManifest

START = 1_000_000.0  # 1970-01-12T13:46:40Z, 14:46:40 in Paris
NOW = START + 180
pytestmark = pytest.mark.usefixtures("paris")


def detail() -> dict[str, Any]:
    """A job as ``GET /v1/jobs/{id}`` sends it: its spec without defaults, times in epoch seconds."""
    manifest = JobManifest.model_validate(
        {
            "metadata": {"name": "train"},
            "spec": {
                "queue": "a",
                "walltime": "80m",
                "tasks": [{"replicas": 2, "resources": {"cpu": "500m", "memory": "256Mi"}, "command": ["run"]}],
            },
        }
    )
    [record] = expand(manifest, "alice", START)
    shown = record.model_dump(mode="json", by_alias=True)
    shown["spec"] = record.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return shown


class Client:
    def __init__(self, job: dict[str, Any], why: dict[str, Any] | None = None) -> None:
        self._job, self._why = job, why

    def jobs(self, **_: Any) -> Iterator[dict[str, Any]]:
        job = self._job
        yield {k: job[k] for k in ("id", "name", "tenant", "queue", "state", "priority", "submit_time")}

    def job(self, _: str) -> dict[str, Any]:
        return self._job

    def logs(self, _: str, *, tail: int) -> Iterator[dict[str, Any]]:
        return iter([])

    def request(self, _method: str, _path: str) -> dict[str, Any]:
        assert self._why is not None
        return self._why


def table(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    client: Client,
    command: str,
    output: str = "table",
) -> str:
    @contextmanager
    def connect(_: argparse.Namespace) -> Iterator[Client]:
        yield client

    monkeypatch.setattr(cli_jobs, "reader_from", connect)
    monkeypatch.setenv("COLUMNS", "160")  # wide enough for every column, whatever the caller's terminal
    args = argparse.Namespace(
        id=client.job("")["id"],
        state=None,
        queue=None,
        tenant=None,
        output=output,
        now=NOW,
        follow=False,
        watch=False,
        all=False,
        mine=False,
        sort="id",
        limit=None,
        expand=False,
        start=False,
    )
    assert getattr(cli_jobs, command)(args) == 0
    return capsys.readouterr().out


def test_jobs_show_when_each_was_submitted(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = table(monkeypatch, capsys, Client(detail()), "cmd_jobs")
    assert "3m ago" in out
    wide = table(monkeypatch, capsys, Client(detail()), "cmd_jobs", "wide")
    assert "14:46:40 (3m ago)" in wide  # the same day as now: the time alone
    assert "1000000" not in out + wide


def test_a_job_shows_its_times_walltime_and_resources(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    job = detail()
    out = table(monkeypatch, capsys, Client(job), "cmd_job")
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "submitted │ 1970-01-12T14:46:40+01:00 (3m ago)" in lines
    assert "walltime │ 1h20m" in lines
    assert "task main │ 2 x cpu=500m, memory=256Mi" in lines
    # the events table: the submit event at the same time
    assert any(line.startswith("14:46:40 (3m ago) │") for line in lines)


def test_explain_shows_the_projected_start_in_local_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    job = detail()
    why = {
        "id": job["id"],
        "state": "Pending",
        "queue": "a",
        "tenant": "alice",
        "summary": "waiting its turn: 1 of 1 in queue a",
        "position": {"in_queue": 1, "queue_length": 1, "overall": 1, "queued": 1, "reached": 1},
        "reasons": [],
        "projected_start": {"time": NOW + 7805, "basis": "its reservation"},
        "clusters": [{"name": "c1", "state": "Ready", "next_end": NOW + 7805}],
    }
    out = table(monkeypatch, capsys, Client(job, why), "cmd_explain")
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "projected start │ 1970-01-12T16:59:45+01:00 (in 2h10m), its reservation" in lines


def test_explain_shows_the_reservation_as_the_json_has_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: a reservation's ``clusters`` is an object, cluster -> the job's tasks held there."""
    job = detail()
    why = {
        "id": job["id"],
        "state": "Reserved",
        "queue": "a",
        "tenant": "alice",
        "summary": "holds a reservation on c1 from 1970-01-12T16:59:45+00:00 (in 2h10m)",
        "position": {"in_queue": 1, "queue_length": 1, "overall": 1, "queued": 1, "reached": 1},
        "reasons": [],
        "reservation": {"clusters": {"c1": 2}, "start": NOW + 7805, "end": NOW + 7865, "tenant": "alice"},
        "other_reservations": [],
        "projected_start": {"time": NOW + 7805, "basis": "its reservation"},
        "clusters": [{"name": "c1", "state": "Ready", "next_end": NOW + 7805}],
    }
    out = table(monkeypatch, capsys, Client(job, why), "cmd_explain")
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert (
        "reservation │ c1 (2 tasks) from 1970-01-12T16:59:45+01:00 (in 2h10m) until 1970-01-12T17:00:45+01:00 "
        "(in 2h11m)"
    ) in lines
