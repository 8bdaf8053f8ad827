"""Why each waiting job waits, as ``fedq jobs`` shows it (issue 36): the production turn plans over a
known world, the leader's status is published as the service publishes it, every job's reason comes
from the one function the API lists with (``federation.waits.wait_of``), and the table is rendered at a
fixed clock and width against the snapshot in ``snapshots/jobs-reasons-*.txt``.

The world, 4 one-cpu nodes on cluster east, now = T (2027-01-15 08:00 UTC, 09:00 in Paris):
- running: ``r1`` (batch, 2 tasks, ends T+10m) and ``r2`` (queue ``capped``, cap cpu=1, 1 task, ends
  T+20m): one cpu free;
- waiting, each worked out by hand from the rule before it was run (Slurm's reason codes,
  https://slurm.schedmd.com/job_reason_codes.html; fedq's order, docs/fairshare.md and docs/semantics.md):
  - ``wide`` (3 cpus, priority 10, first in line): fits nowhere now; reservation.depth 1 gives the first
    blocked job a reservation, from when r1's 2 cpus and the free one make 3: T+10m. Reserved,
    **Resources**, START T+10m (09:10).
  - ``small`` (1 cpu, walltime 1h): fits the free cpu now, but running past T+10m it would take a cpu
    wide's reservation counts on: backfill refuses it: **Reservation**.
  - ``two`` (2 cpus, priority 5): fits nowhere now and is behind wide, whose room comes first:
    **Priority** (Slurm: "one or more higher priority jobs exist").
  - ``dep`` (afterok r1, still running): **Dependency**.
  - ``held-user`` held by its tenant (tenant/ann): **JobHeldUser**; ``held-admin`` held by an admin
    (admin/root), which only an admin may release: **JobHeldAdmin**.
  - ``capjob`` (queue capped, whose cap cpu=1 r2 already holds): **QueueCap** (Slurm's AssocGrp*).
  - array ``sweep`` of 4 (1 cpu each, walltime 2h, parallelism 2): elements 0 and 1 hold the array's 2
    slots and, like small, would run into wide's reservation: **Reservation**, folded ``sweep-[0-1]``;
    2 and 3 wait for a slot: **ArrayThrottle**, folded ``sweep-[2-3]``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from federation.accounting import Accountant
from federation.cli import build_parser
from federation.cli import jobs as cli_jobs
from federation.config import FederationConfig
from federation.jobs import job_record
from federation.lifecycle import Event, Hold, submitted, transition
from federation.models import JobRecord, JobSpecBody, JobState, QueueTree, QueueTreeConfig
from federation.models.cluster import ClusterReport, NodeReport, RunningJob
from federation.models.dependency import Wait
from federation.scheduler.state import FederationState
from federation.scheduler.status import status_of
from federation.scheduler.turn import Turn, run_sync
from federation.waits import CODES, SchedulerView, wait_of
from policies import ManualClock

HERE = Path(__file__).parent / "snapshots"
T = 1_800_000_000.0  # 2027-01-15T08:00:00Z
MINUTE = 60.0
EXPECTED = {
    "wide": ("Reserved", "Resources"),
    "small": ("Pending", "Reservation"),
    "two": ("Pending", "Priority"),
    "dep": ("Pending", "Dependency"),
    "held-user": ("Pending", "JobHeldUser"),
    "held-admin": ("Pending", "JobHeldAdmin"),
    "capjob": ("Pending", "QueueCap"),
    "sweep-0": ("Pending", "Reservation"),
    "sweep-1": ("Pending", "Reservation"),
    "sweep-2": ("Pending", "ArrayThrottle"),
    "sweep-3": ("Pending", "ArrayThrottle"),
}
pytestmark = pytest.mark.usefixtures("paris")


def spec(queue: str, cpus: int, **fields: Any) -> JobSpecBody:
    return JobSpecBody.model_validate(
        {"queue": queue, "tasks": [{"name": "main", "replicas": cpus, "resources": {"cpu": 1}}], **fields}
    )


class Records:
    """The turn's port: each event lands on the job's record and the state is told, as a commit would."""

    def __init__(self, state: FederationState) -> None:
        self.state = state
        self.jobs: dict[str, JobRecord] = {}
        self.revision = 0

    def put(self, record: JobRecord) -> None:
        self.revision += 1
        self.jobs[record.id] = record
        self.state.upsert_job(record, self.revision, record.to_bytes())

    async def commit(self, events: Sequence[tuple[str, Event]], now: float) -> list[JobRecord]:
        landed = []
        for job_id, event in events:
            outcome = transition(self.jobs[job_id], event, now)
            if outcome is not None:
                self.put(outcome.record)
                landed.append(outcome.record)
        return landed


def world() -> tuple[Records, dict[str, Any]]:
    """The world of the module's docstring after one turn of the production scheduler, and the status
    the leader publishes for it."""
    queues = {
        "queues": [{"name": "batch", "tenants": ["ann"]}, {"name": "capped", "tenants": ["ann"], "cap": {"cpu": 1}}]
    }
    state = FederationState()
    state.set_queues(QueueTree(QueueTreeConfig.model_validate(queues)))
    records = Records(state)

    def job(job_id: str, body: JobSpecBody, submit: float, **fields: Any) -> JobRecord:
        return job_record(job_id, job_id, "ann", body, submit, [submitted(submit)], **fields)

    running = {
        "r1": (spec("batch", 2, walltime=3600), T + 10 * MINUTE),
        "r2": (spec("capped", 1, walltime=3600), T + 20 * MINUTE),
    }
    for job_id, (body, end) in running.items():
        start = end - 3600
        records.put(job(job_id, body, start - 1, state=JobState.RUNNING, cluster="east", epoch=1, start_time=start))
    state.set_cluster("east", {}, cordoned=False)
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": 1}, free={"cpu": 1 if i == 3 else 0}) for i in range(4)]
    runs = [
        RunningJob(job_id=j, epoch=1, resources={"cpu": b.total_resources()["cpu"]}, expected_end=e)
        for j, (b, e) in running.items()
    ]
    state.set_report("east", T, ClusterReport(nodes=nodes, running=runs))
    waiting = [
        job("wide", spec("batch", 3, priority=10), T - 600),
        job("small", spec("batch", 1, walltime=3600), T - 500),
        job("two", spec("batch", 2, priority=5), T - 450),
        job("dep", spec("batch", 1), T - 400, after=[Wait(job="r1", condition="afterok")]),
        job("held-user", spec("batch", 1), T - 350),
        job("held-admin", spec("batch", 1), T - 340),
        job("capjob", spec("capped", 1), T - 300),
    ]
    sweep = spec("batch", 1, walltime=7200, array={"count": 4, "parallelism": 2})
    waiting += [job(f"sweep-{i}", sweep, T - 200, array_id="sweep", array_index=i) for i in range(4)]
    for record in waiting:
        records.put(record)
    for job_id, by in (("held-user", "tenant/ann"), ("held-admin", "admin/root")):
        outcome = transition(records.jobs[job_id], Hold(by), T - 100)
        assert outcome is not None
        records.put(outcome.record)
    config = FederationConfig()
    turn = Turn(
        config, ManualClock(T), Accountant(ManualClock(T), config.fairshare.half_life, config.fairshare.usage_weights)
    )
    done = run_sync(turn.run(state, records, T))
    assert done.dispatched == [], [r.id for r in done.dispatched]
    return records, json.loads(status_of(done.plan, state).body(T))  # type: ignore[arg-type]


class Listing:
    """The API's listing as ``FedqClient.jobs`` hands it out: each summary with its ``wait``."""

    def __init__(self, records: Records, status: dict[str, Any]) -> None:
        view = SchedulerView.of(status)
        self.items = []
        for record in records.jobs.values():
            item = record.summary()
            found = wait_of(item, view, T)
            self.items.append({**item, "wait": None if found is None else found.view()})

    def __enter__(self) -> Listing:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def jobs(self, state: list[str] | None = None, **_: Any) -> Iterator[dict[str, Any]]:
        """``state``: the states listed, as the CLI asks for them in one request (None: any)."""
        return (item for item in self.items if state is None or item["state"] in state)


@pytest.fixture(scope="module")
def listing() -> Listing:
    return Listing(*world())


def test_each_waiting_job_has_the_reason_worked_out_by_hand(listing: Listing) -> None:
    got = {i["id"]: (i["state"], i["wait"]["code"]) for i in listing.items if i["wait"] is not None}
    print("reasons:", json.dumps(got, sort_keys=True))
    assert got == EXPECTED
    wide = next(i for i in listing.items if i["id"] == "wide")
    assert wide["wait"]["start"] == T + 10 * MINUTE, wide["wait"]
    assert all(i["wait"] is None for i in listing.items if i["state"] == "Running")


def render(
    listing: Listing, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    @contextmanager
    def connect(_: argparse.Namespace) -> Iterator[Listing]:
        yield listing

    monkeypatch.setattr(cli_jobs, "reader_from", connect)
    monkeypatch.setenv("COLUMNS", "160")
    args = build_parser().parse_args(argv)
    args.now = T
    assert args.func(args) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("name", "argv"), [("folded", ["jobs", "--start"]), ("expanded", ["jobs", "--expand"])])
def test_fedq_jobs_shows_the_codes_and_folds_arrays(
    listing: Listing, name: str, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = render(listing, argv, monkeypatch, capsys)
    print(out)
    snapshot = HERE / f"jobs-reasons-{name}.txt"
    if os.environ.get("FEDQ_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(out)
    assert out == snapshot.read_text()
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
    if name == "folded":
        assert "sweep-[0-1]" in rows and "Reservation" in rows["sweep-[0-1]"], rows
        assert "sweep-[2-3]" in rows and "ArrayThrottle" in rows["sweep-[2-3]"], rows
        assert "09:10" in rows["wide"], rows["wide"]  # START: its reservation's, 10 minutes on
    else:
        assert {f"sweep-{i}" for i in range(4)} <= set(rows), rows


def test_a_job_the_pass_went_over_waits_with_its_tenants_fair_share() -> None:
    # Worked by hand (docs/fairshare.md; HTCondor's submitter limit, tests/policies/test_tenant_pass_over.py):
    # cluster east has 8 one-cpu nodes; ann runs 4 and has a0..a4 waiting (1 cpu each); bob has b0 (3
    # cpus). bob wants 3, so the queue's 8 spin to slices of 3 for bob and 5 for ann. bob, holding
    # nothing, goes first and b0 starts; ann (4 of 5) then starts a0, and the queue holds 8 of its 8. a1
    # is refused for the queue's fair share, and the pass goes over ann's a2..a4. The surplus pass finds
    # no room for a1 and reserves for it; backfill tries a2..a4 and finds none either. A job whose own
    # reasons are not published (past the status's first 2,000) waits with ann's: Slurm's "Priority".
    state = FederationState()
    state.set_queues(
        QueueTree(QueueTreeConfig.model_validate({"queues": [{"name": "shared", "tenants": ["ann", "bob"]}]}))
    )
    records = Records(state)
    for i in range(4):
        body, end = spec("shared", 1, walltime=3600), T + (i + 1) * MINUTE
        start = end - 3600
        run = job_record(f"r{i}", f"r{i}", "ann", body, start - 1, [submitted(start - 1)])
        records.put(
            run.model_copy(update={"state": JobState.RUNNING, "cluster": "east", "epoch": 1, "start_time": start})
        )
    state.set_cluster("east", {}, cordoned=False)
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": 1}, free={"cpu": 0 if i < 4 else 1}) for i in range(8)]
    runs = [
        RunningJob(job_id=f"r{i}", epoch=1, resources={"cpu": 1}, expected_end=T + (i + 1) * MINUTE) for i in range(4)
    ]
    state.set_report("east", T, ClusterReport(nodes=nodes, running=runs))
    for i in range(5):
        records.put(job_record(f"a{i}", f"a{i}", "ann", spec("shared", 1), T - 100 + i, [submitted(T - 100 + i)]))
    records.put(job_record("b0", "b0", "bob", spec("shared", 3), T - 50, [submitted(T - 50)]))
    config = FederationConfig()
    turn = Turn(
        config, ManualClock(T), Accountant(ManualClock(T), config.fairshare.half_life, config.fairshare.usage_weights)
    )

    done = run_sync(turn.run(state, records, T))
    assert done.plan is not None
    status = json.loads(status_of(done.plan, state).body(T))

    assert sorted(record.id for record in done.dispatched) == ["a0", "b0"]
    held = ["fair-share", "fairshare", "queue shared holds its fair share (8 units)"]
    assert status["tenant_reasons"] == {"shared": {"ann": held}}
    short = "0/1 clusters can take the whole job (cpu=1) now: 1 short of room"
    assert status["reasons"]["a4"] == [["insufficient", "allocate", short]]
    del status["reasons"]["a4"]  # as if past the published 2,000
    found = wait_of(records.jobs["a4"].summary(), SchedulerView.of(status), T)
    assert found is not None and (found.code, found.text) == ("Priority", f"{CODES['Priority']}: {held[2]}"), found
