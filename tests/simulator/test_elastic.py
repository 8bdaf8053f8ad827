"""Elastic jobs (``minAvailable`` below the job's tasks) end to end through ``fedq simulate``.

Volcano's rule, which fedq follows:
- the gang plugin (PodGroup ``minMember``, fedq's ``minAvailable``): a job starts when its gang of
  ``minAvailable`` tasks fits (gang ``JobReady``/``JobPipelined``), not when all of it fits; the federation
  dispatches it by its gang (``Placer._place_whole``) and its member launches the gang at once;
- allocate (volcano pkg/scheduler/actions/allocate): once a job is ready and still has pending tasks it
  is pushed back into the job queue (``if ssn.JobReady(job) && !tasks.Empty() { jobs.Push(job) }``), so
  every further task goes to the job first in job order: with the ``drf`` plugin's ``JobOrderFn``, the
  job with the smallest dominant share (after gang's order: not-ready jobs first). The tasks beyond the
  gang therefore run as room allows, shared between jobs by DRF;
- a job is done when all its tasks are (a PodGroup completes when its pods have); each simulated task
  runs its ``runtime`` from its own start.

tasks.csv shows the split: one row per set of a job's tasks that started and ended together.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.simulator.sim_cli import fedq, jobs_csv


def _simulate(tmp_path: Path, scenario: dict[str, Any]) -> tuple[dict[str, dict[str, str]], list[tuple[str, ...]]]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    out = tmp_path / "out"
    assert fedq("simulate", str(path), "--output-dir", str(out), "-o", "json") == 0
    with (out / "tasks.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == ["id", "epoch", "cluster", "task", "indexes", "tasks", "start", "end", "state"]
        tasks = [(r["id"], r["indexes"], r["tasks"], r["start"], r["end"], r["state"]) for r in reader]
    return jobs_csv(out), tasks


def _elastic(
    job_id: str, tenant: str, submit: float, replicas: int, cpu: int = 1, min_available: int = 2
) -> dict[str, Any]:
    return {
        "id": job_id,
        "tenant": tenant,
        "queue": "batch",
        "submit": submit,
        "runtime": 100,
        "walltime": 100,
        "minAvailable": min_available,
        "tasks": [{"replicas": replicas, "resources": {"cpu": cpu}}],
    }


def test_an_elastic_job_starts_with_its_gang_and_its_other_tasks_run_as_room_allows(tmp_path: Path) -> None:
    # 10 nodes of 1 cpu. E12: 12 tasks of 1 cpu, minAvailable 2, each task 100 s.
    # t=0: E12's gang (2) fits: the federation dispatches it by its gang (2 cpu charged) and the member
    #      launches it with as many more as fit now: 10 tasks (0-9) run 0-100; tasks 10 and 11 wait.
    #      (Before: the simulator skipped the global cycle because all 12 cpu never fit one cluster, so
    #      E12 waited for the next event, the submits at 200.)
    # t=100: tasks 0-9 end; 10 and 11 are placed: they run 100-200. E12 ends at 200 (its last task).
    # t=200: A and B (10 tasks each, minAvailable 2, tenants alice and bob) arrive; the federation
    #      dispatches both (gangs of 2 + 2 <= 10 idle). The member's session: gang first (not-ready jobs
    #      before ready ones), A 2, B 2 (4 cpu); then the 6 cpu left go one task at a time to the job of
    #      smaller dominant share (DRF), ties by submit then id: A 3/10, B 3/10, A 4/10, B 4/10, A 5/10,
    #      B 5/10. Each runs 5 tasks (0-4) 200-300, the other 5 (5-9) 300-400 (again shared 5 and 5:
    #      at 300 both hold nothing), and ends at 400.
    scenario = {
        "clusters": [{"name": "c1", "nodes": [{"count": 10, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice", "bob"]}],
        "jobs": [_elastic("E12", "alice", 0, 12), _elastic("A", "alice", 200, 10), _elastic("B", "bob", 200, 10)],
    }
    jobs, tasks = _simulate(tmp_path, scenario)
    assert {j: (r["start"], r["end"], r["state"]) for j, r in jobs.items()} == {
        "E12": ("0.000", "200.000", "Succeeded"),
        "A": ("200.000", "400.000", "Succeeded"),
        "B": ("200.000", "400.000", "Succeeded"),
    }
    assert tasks == [
        ("E12", "0-9", "10", "0.000", "100.000", "Succeeded"),
        ("E12", "10-11", "2", "100.000", "200.000", "Succeeded"),
        ("A", "0-4", "5", "200.000", "300.000", "Succeeded"),
        ("A", "5-9", "5", "300.000", "400.000", "Succeeded"),
        ("B", "0-4", "5", "200.000", "300.000", "Succeeded"),
        ("B", "5-9", "5", "300.000", "400.000", "Succeeded"),
    ]
    # Utilization counts what the tasks held: E12 10 x 100 + 2 x 100 = 1,200 cpu-s, A and B 1,000 each:
    # 3,200 of 10 cpus x 400 s = 0.8 (each job's resources times its span would say 1.6).
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["utilization"]["cpu"] == pytest.approx(0.8)


def test_the_tasks_beyond_the_gangs_are_shared_by_dominant_share_not_by_task_count(tmp_path: Path) -> None:
    # 6 nodes of 2 cpu (12 cpu). S: 12 tasks of 1 cpu; W: 6 tasks of 2 cpu; both minAvailable 1, both at 0.
    # Gangs first: S 1 cpu (share 1/12), W 2 cpu (2/12). Then one task at a time to the smaller dominant
    # share (Volcano drf JobOrderFn), ties by submit then id ("S" before "W" in file order):
    #   S 2/12 (S<W), S 3/12 (tie: S first), W 4/12, S 4/12, S 5/12 (tie), W 6/12, S 6/12 = 12 cpu.
    # S runs 6 tasks, W 3: equal dominant shares (6/12 each), not equal task counts. binpack packs S's
    # 1-cpu tasks two to a node, so W's 2-cpu tasks always find a node of their own.
    # At 100 all of that ends and the same split repeats for the rest: S 6 more, W 3 more, 100-200.
    scenario = {
        "clusters": [{"name": "c1", "nodes": [{"count": 6, "resources": {"cpu": 2}}]}],
        "queues": [{"name": "batch", "tenants": ["alice", "bob"]}],
        "jobs": [_elastic("S", "alice", 0, 12, min_available=1), _elastic("W", "bob", 0, 6, cpu=2, min_available=1)],
    }
    jobs, tasks = _simulate(tmp_path, scenario)
    assert {j: (r["start"], r["end"]) for j, r in jobs.items()} == {
        "S": ("0.000", "200.000"),
        "W": ("0.000", "200.000"),
    }
    first_wave = {(job, count) for job, _, count, start, _, _ in tasks if start == "0.000"}
    assert first_wave == {("S", "6"), ("W", "3")}
    assert sum(int(count) for job, _, count, _, _, _ in tasks if job == "S") == 12
    assert sum(int(count) for job, _, count, _, _, _ in tasks if job == "W") == 6


def test_a_rigid_job_keeps_one_row_per_run_of_its_gang(tmp_path: Path) -> None:
    # A rigid gang (no minAvailable) starts whole: one tasks.csv row for its 4 tasks.
    rigid = _elastic("R", "alice", 0, 4)
    del rigid["minAvailable"]
    scenario = {
        "clusters": [{"name": "c1", "nodes": [{"count": 4, "resources": {"cpu": 1}}]}],
        "queues": [{"name": "batch", "tenants": ["alice"]}],
        "jobs": [rigid],
    }
    jobs, tasks = _simulate(tmp_path, scenario)
    assert (jobs["R"]["start"], jobs["R"]["end"]) == ("0.000", "100.000")
    assert tasks == [("R", "0-3", "4", "0.000", "100.000", "Succeeded")]
