"""Run the peer simulator AccaSim (EASY backfilling) on an SWF trace and print its wall time and metrics.

    .venv/bin/python bench/peer_accasim.py                      # KTH-SP2, one machine of the trace's size
    .venv/bin/python bench/peer_accasim.py --runs 3             # best/median of three runs
    .venv/bin/python bench/peer_accasim.py --check-backfill     # does its EASY protect the reservation?

AccaSim 1.1.3 (the last release) imports ``collections.Mapping``, removed in Python 3.10, so it runs in
its own venv (default /tmp/accasim-venv) built from a Python <= 3.9, never in the project's venv. This
file runs twice: as the driver under the project's Python (setup, then metrics with fedq's own
``compute_metrics`` so both simulators are measured by one definition), and with ``--child`` under the
AccaSim venv's Python (the simulation). Hence stdlib-only imports at the top, and it parses under 3.9.
See bench/peer_accasim.md for the figures and how AccaSim's model differs from fedq's.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from federation.simulator.records import JobOutcome

ACCASIM = "accasim==1.1.3"
DEFAULT_VENV = Path("/tmp/accasim-venv")
REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"

# AccaSim's dispatch-plan line, with raw integer times instead of its default date strings.
SCHEDULE_FORMAT = {
    "format": "{job_id};{user};{queue_time};{start_time};{end_time};{cores}",
    "attributes": {
        "job_id": ("id", "str"),
        "user": ("user_id", "str"),
        "queue_time": ("queued_time", "int"),
        "start_time": ("start_time", "int"),
        "end_time": ("end_time", "int"),
        "cores": ("core", "int"),
    },
}

# Three single-core nodes. Job 1 holds two of them until t=100; job 2 needs all three, so EASY
# reserves t=100 for it; job 3 (one core, 1000 s) fits now but would still run at t=100, so EASY must
# not backfill it: job 2 should start at 100 and job 3 at 200.
BACKFILL_PROBE = """\
1 0 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1
2 1 -1 100 3 -1 -1 3 100 -1 1 2 1 -1 1 -1 -1 -1
3 2 -1 1000 1 -1 -1 1 1000 -1 1 3 1 -1 1 -1 -1 -1
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="SWF trace, gzipped or plain")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="AccaSim's own venv (made if missing)")
    parser.add_argument("--python", help="a Python <= 3.9 to build the venv with (default: searched)")
    parser.add_argument("--runs", type=int, default=1, help="repeat the simulation; report min and median")
    parser.add_argument("--workdir", type=Path, help="keep AccaSim's inputs and outputs here")
    parser.add_argument("--check-backfill", action="store_true", help="run the 3-job reservation probe")
    parser.add_argument("--child", nargs=3, metavar=("WORKDIR", "SWF", "SYSCONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_accasim(*(Path(a) for a in args.child))
        return
    python = ensure_venv(args.venv, args.python)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="accasim-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.check_backfill:
        check_backfill(python, workdir)
    else:
        replay(python, args.trace, workdir, args.runs)


def ensure_venv(venv: Path, python: str | None) -> Path:
    """The venv's interpreter, after creating the venv and installing AccaSim if needed."""
    exe = venv / "bin" / "python"
    if exe.exists() and subprocess.run([str(exe), "-c", "import accasim.base.simulator_class"]).returncode == 0:
        return exe
    base = python or find_old_python()
    print(f"creating {venv} with {base} and installing {ACCASIM}", file=sys.stderr)
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(exe), "-m", "pip", "install", "--quiet", ACCASIM], check=True)
    return exe


def find_old_python() -> str:
    """A Python 3.5-3.9 on PATH or under pyenv: AccaSim 1.1.3 does not import on 3.10 or later."""
    names = [shutil.which(f"python3.{minor}") for minor in (9, 8, 7, 6)]
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[5-9].*/bin/python3")), reverse=True)
    probe = "import sys; sys.exit(0 if (3, 5) <= sys.version_info[:2] <= (3, 9) else 1)"
    for candidate in [n for n in names if n] + pyenv:
        if subprocess.run([candidate, "-c", probe], capture_output=True).returncode == 0:
            return candidate
    sys.exit("AccaSim 1.1.3 needs Python <= 3.9 (it imports collections.Mapping); pass --python")


def replay(python: Path, trace: Path, workdir: Path, runs: int) -> None:
    """Simulate ``trace`` on one machine of its size and print AccaSim's and fedq's figures."""
    # Imported here, not at the top: the --child run of this file has no fedq installed.
    from federation.simulator.metrics import compute_metrics
    from federation.simulator.swf import read_swf

    shape = read_swf(trace).machine()
    swf = workdir / (trace.name[: -len(".gz")] if trace.name.endswith(".gz") else trace.name)
    raw = trace.read_bytes()
    swf.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)  # AccaSim reads plain text only
    sysconfig = write_sysconfig(workdir, shape.nodes, shape.cores_per_node)
    summaries, process_walls = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        summaries.append(run_child(python, workdir, swf, sysconfig))
        process_walls.append(time.perf_counter() - t0)
    last = summaries[-1]
    records = read_schedule(Path(last["schedule"]))
    metrics = compute_metrics(records, {"cpu": float(shape.nodes * shape.cores_per_node)})
    figures = {
        "trace": trace.name,
        "machine": f"{shape.nodes} nodes x {shape.cores_per_node} cores",
        "runs": runs,
        "wall_process_s": _spread(process_walls),
        "wall_simulator_s": _spread([s["wall_simulator_s"] for s in summaries]),
        "wall_loop_s": _spread([s["wall_loop_s"] for s in summaries]),
        "accasim_stats": last["stats"],
        "fedq_metrics": {k: v for k, v in metrics.items() if k != "tenants"},
    }
    print(json.dumps(figures, indent=2, sort_keys=True))


def check_backfill(python: Path, workdir: Path) -> None:
    """Run the probe of BACKFILL_PROBE and say whether AccaSim delayed the reserved job."""
    swf = workdir / "backfill-probe.swf"
    swf.write_text(BACKFILL_PROBE)
    summary = run_child(python, workdir, swf, write_sysconfig(workdir, 3, 1))
    starts = {r.id: r.start for r in read_schedule(Path(summary["schedule"]))}
    print(json.dumps({"starts": starts, "easy_expects": {"1": 0, "2": 100, "3": 200}}, sort_keys=True))
    verdict = "protected" if starts.get("2") == 100 else "NOT protected: a backfilled job delayed it"
    print(f"reservation of job 2 {verdict}")


def write_sysconfig(workdir: Path, nodes: int, cores: int) -> Path:
    path = workdir / f"sys-{nodes}x{cores}.json"
    path.write_text(json.dumps({"groups": {"node": {"core": cores}}, "resources": {"node": nodes}}))
    return path


def run_child(python: Path, workdir: Path, swf: Path, sysconfig: Path) -> dict[str, Any]:
    """One AccaSim simulation in its own interpreter; returns the summary the child wrote."""
    log = workdir / "accasim.log"
    with log.open("w") as err:
        subprocess.run(
            [str(python), __file__, "--child", str(workdir), str(swf), str(sysconfig)], check=True, stderr=err
        )
    summary: dict[str, Any] = json.loads((workdir / "summary.json").read_text())
    return summary


def read_schedule(path: Path) -> list[JobOutcome]:
    """AccaSim's dispatch plan (SCHEDULE_FORMAT lines) as fedq JobOutcomes."""
    from federation.simulator.records import JobOutcome  # see replay(): not importable in the child

    records = []
    for line in path.read_text().splitlines():
        job_id, user, submit, start, end, cores = line.split(";")
        records.append(
            JobOutcome(
                id=job_id,
                tenant=f"user{user}",
                queue="default",
                cluster="accasim",
                submit=float(submit),
                start=float(start),
                end=float(end),
                state="Succeeded",
                resources={"cpu": float(cores)},
            )
        )
    return records


def run_accasim(workdir: Path, swf: Path, sysconfig: Path) -> None:
    """The --child side, under AccaSim's Python: simulate with EASY + first fit, write summary.json."""
    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import EASYBackfilling
    from accasim.base.simulator_class import Simulator

    results = workdir / "results"
    t0 = time.perf_counter()
    simulator = Simulator(
        str(swf),
        str(sysconfig),
        EASYBackfilling(FirstFit()),
        RESULTS_FOLDER_PATH=str(results),
        SCHEDULE_OUTPUT=SCHEDULE_FORMAT,
    )
    outputs = simulator.start_simulation()
    wall = time.perf_counter() - t0
    stats = {}
    for line in Path(outputs["stats-"]).read_text().splitlines():
        key, _, value = line.partition(":")
        stats[key.strip()] = value.strip()
    summary = {
        "wall_simulator_s": wall,
        "wall_loop_s": simulator.end_simulation_time - simulator.start_simulation_time,
        "schedule": outputs["sched-"],
        "stats": stats,
    }
    (workdir / "summary.json").write_text(json.dumps(summary))


def _spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 2), "median": round(statistics.median(values), 2)}


if __name__ == "__main__":
    main()
