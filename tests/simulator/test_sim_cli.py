"""``fedq simulate`` as a command: SWF replay, outputs, plots, errors, determinism across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sim_cli import ROOT, SCENARIOS, fedq, jobs_csv, starts

from federation.simulator.output import JOBS_CSV_HEADER

# A 4-node, 4-processor machine. Fields: job submit wait run procs cpu mem reqprocs reqtime reqmem
# status user group exe queue partition preceding think. Line 7 is malformed (17 fields).
TRACE = """\
; MaxNodes: 4
; MaxProcs: 4
1   0 -1 100 2 -1 -1 2 100 -1 1 7 1 -1 1 -1 -1 -1
2  10 -1  50 4 -1 -1 4  -1 -1 1 7 1 -1 1 -1 -1 -1
3  20 -1  30 1 -1 -1 1  60 -1 1 7 2 -1 1 -1 -1 -1
4  30 -1 200 2 -1 -1 2 100 -1 1 9 1 -1 1 -1 -1 -1
5  40 -1  10 1 -1 -1 1  10 -1 1 7 1 -1 1 -1 -1
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.swf"
    path.write_text(TRACE, encoding="utf-8")
    return path


def test_swf_replay_on_one_cluster(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert fedq("simulate", "--swf", str(trace), "--output-dir", str(out), "-o", "json") == 0
    rows = jobs_csv(out)
    # Gangs of P one-cpu tasks on 4 one-cpu nodes; walltime = field 9, or the runtime when it is -1;
    # tenant = user (jobs 1-3 are user 7's, job 4 is user 9's).
    # t=0: job 1 (2 procs, walltime 100) starts. t=10: job 2 (4 procs, walltime = runtime 50) reserves
    # from 100. t=20: job 3 (1 proc, walltime 60) ends by 80 <= 100: it backfills, and really ends at 50.
    # t=30: job 4 (2 procs, walltime 100). Its user holds nothing while user 7 holds 3 cpus, so in
    # fair-share order job 4 now comes first: it is the head, finds 1 cpu free and reserves from 80
    # (job 3's walltime end). At 50 job 3 really ends and job 4 starts; it runs 200 s on a 100 s
    # walltime and is killed at 150. Job 2 needs all 4 cpus: it starts at 150.
    assert starts(rows) == {"1": 0.0, "2": 150.0, "3": 20.0, "4": 50.0}
    assert (rows["4"]["end"], rows["4"]["state"]) == ("150.000", "Failed")
    assert [rows[j]["tenant"] for j in "1234"] == ["user7", "user7", "user7", "user9"]
    assert "tiny.swf:7: expected 18 fields, found 17" in capsys.readouterr().err


def test_swf_replay_with_one_tenant_is_first_come_first_served(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "out"
    assert fedq("simulate", "--swf", str(trace), "--tenants", "one", "--output-dir", str(out), "-o", "json") == 0
    rows = jobs_csv(out)
    # As above until t=30, but job 4 is now the same tenant's as job 2 and comes after it: job 2 keeps
    # its reservation from 100. At 50 job 4 (2 procs) would run past 100, when job 2 needs all 4 cpus,
    # so it waits: job 2 runs [100, 150), job 4 starts at 150 and is killed at its walltime, at 250.
    assert starts(rows) == {"1": 0.0, "2": 100.0, "3": 20.0, "4": 150.0}
    assert (rows["4"]["end"], rows["4"]["state"]) == ("250.000", "Failed")
    assert {row["tenant"] for row in rows.values()} == {"everyone"}


def test_swf_split_over_two_clusters(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "out"
    assert fedq("simulate", "--swf", str(trace), "--clusters", "2", "--output-dir", str(out), "-o", "json") == 0
    rows = jobs_csv(out)
    # Two clusters of 2 nodes. Job 2 needs 4 at once, more than either cluster: Unschedulable.
    # Job 1 (2) fills one cluster at 0; job 3 (1) goes to the other at 20. Job 4 (2) then waits: its
    # earliest room is job 3's cluster when job 3's walltime ends at 80, but job 3 really ends at 50,
    # so job 4 starts there at 50 and is killed at its walltime, at 150.
    assert starts(rows) == {"1": 0.0, "2": None, "3": 20.0, "4": 50.0}
    assert rows["2"]["state"] == "Unschedulable"
    assert rows["1"]["cluster"] != rows["3"]["cluster"] == rows["4"]["cluster"]
    assert (rows["4"]["end"], rows["4"]["state"]) == ("150.000", "Failed")


def test_swf_limit_and_strict(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fedq("simulate", "--swf", str(trace), "--limit", "2", "--output-dir", str(tmp_path / "a"), "-o", "json") == 0
    assert list(jobs_csv(tmp_path / "a")) == ["1", "2"]
    capsys.readouterr()
    assert fedq("simulate", "--swf", str(trace), "--strict", "--output-dir", str(tmp_path / "b")) == 1
    assert "tiny.swf:7: expected 18 fields" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_outputs_metrics_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert fedq("simulate", str(SCENARIOS / "fairshare.yaml"), "--output-dir", str(out), "--plot", "-o", "json") == 0
    assert (out / "jobs.csv").read_text(encoding="utf-8").splitlines()[0] == ",".join(JOBS_CSV_HEADER)
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    for key in ("jobs", "completed", "rejected", "mean_wait", "p95_wait", "mean_bounded_slowdown", "makespan"):
        assert key in metrics
    assert set(metrics["utilization"]) == {"cpu"}
    # Six jobs, all completed; waits 0 (AH), 1000 (BH), 50 (b1, a1, a2), 150 (b2): mean 1300 / 6.
    assert (metrics["jobs"], metrics["completed"], metrics["rejected"]) == (6, 6, 0)
    assert metrics["mean_wait"] == pytest.approx(1300 / 6, abs=1e-6)
    # alice and bob both submit to the one leaf: fair shares 1/2 each. Usage in cpu-seconds: alice
    # 3*1000 + 2*100 = 3200, bob 3*100 + 2*100 = 500: shares 0.8649 and 0.1351 of 3700.
    assert metrics["tenants"]["alice"]["usage_share"] == pytest.approx(3200 / 3700, abs=1e-6)
    assert metrics["tenants"]["bob"]["jobs"] == 3
    assert 0 < metrics["jain_fairness"] < 1
    for name in ("utilization.png", "tenant_shares.png", "waits.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_scenario_and_a_trace_together_is_a_usage_error(tmp_path: Path, trace: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        fedq("simulate", str(SCENARIOS / "easy.yaml"), "--swf", str(trace), "--output-dir", str(tmp_path))
    assert exit_info.value.code == 2


def refused(scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``fedq simulate`` says about a bad scenario: it exits 1 and writes nothing."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(scenario, encoding="utf-8")
    assert fedq("simulate", str(bad), "--output-dir", str(tmp_path / "out")) == 1
    assert not (tmp_path / "out").exists()
    return capsys.readouterr().err


def test_a_bad_scenario_names_the_file_and_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(
        "clusters: [{name: c, nodes: [{count: 1, resources: {cpu: 1}}]}]\n"
        "queues: [{name: q}]\n"
        "jobs: [{id: j, tenant: t, queue: q, submit: 0, runtime: 1, tasks: [{replicas: 1}], walltimee: 5}]\n",
        tmp_path,
        capsys,
    )
    assert "bad.yaml" in err and "walltimee" in err


def test_bad_node_groups_are_reported_at_their_place_with_the_other_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(
        "clusters:\n"
        "- {name: east, nodes: [{count: 2, resources: {cpu: 4}}]}\n"
        "- {name: west, nodes: [{count: 1, resources: {cpu: 4}}, {count: 1, resources: {cpu: -4}}]}\n"
        "- {name: north, nodes: [{count: 0, resources: {cpu: 4}}]}\n"
        "queues: [{name: q}]\n"
        "jobs: [{id: j, tenant: t, queue: q, submit: -1, runtime: 1, tasks: [{replicas: 1}]}]\n",
        tmp_path,
        capsys,
    )
    assert "3 validation errors" in err
    assert "clusters.1.nodes\n  Value error, node group 1: resource 'cpu': quantity must not be negative" in err
    assert "clusters.2.nodes\n  Value error, no nodes: every group has count 0" in err
    assert "jobs.0.submit" in err


def test_an_output_directory_that_cannot_be_made_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    assert fedq("simulate", str(SCENARIOS / "easy.yaml"), "--output-dir", str(blocker / "out")) == 1
    assert (
        capsys.readouterr().err.strip()
        == f"error: cannot create the output directory {blocker / 'out'}: Not a directory"
    )


def test_same_inputs_give_byte_identical_outputs_in_separate_processes(tmp_path: Path) -> None:
    """Different hash seeds: nothing may depend on the iteration order of sets of strings."""
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        for name in ("reclaim", "fairshare", "clusters"):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "federation.cli",
                    "simulate",
                    str(SCENARIOS / f"{name}.yaml"),
                    "--output-dir",
                    str(out / name),
                ],
                cwd=ROOT,
                env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
                check=True,
                capture_output=True,
            )
        outputs.append(
            [
                (out / n / f).read_bytes()
                for n in ("reclaim", "fairshare", "clusters")
                for f in ("jobs.csv", "metrics.json")
            ]
        )
    assert outputs[0] == outputs[1]
