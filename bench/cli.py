"""``fedq`` start-up: the whole process of a client command, from exec to exit, against a running server.

Starts ``fedq server`` on the memory store over https (a CA of the run, as ``fedq up`` serves it),
submits ``--jobs`` jobs, then runs each command ``--runs`` times, alternating with ``python -c pass``
(A B A B ...: the ratio is taken pair by pair, so the machine's drift during the run moves both):

- ``fedq --version`` and ``fedq jobs --help``: the parser alone;
- ``fedq jobs`` and ``fedq job ID``: the parser, the HTTP client, the requests and the table.

Prints each command's median wall time, its ratio to ``python -c pass`` (median of the pairs) and the
target (issue 24: 0.3 s for ``fedq jobs --help`` and ``fedq jobs``; issue 36: 0.35 s for ``fedq job ID``);
exits 1 if a target is missed. The venv's ``fedq`` imports the code its editable install names: to time
another checkout's, run with ``PYTHONPATH`` set to it (the commands inherit the environment).

Run: .venv/bin/python bench/cli.py [--runs 15] [--jobs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from machine import speed_marker  # noqa: E402

from federation.client import FedqClient  # noqa: E402
from federation.launcher import ServerProcess  # noqa: E402
from federation.tls import LOOPBACK_NAMES, ThrowawayCA  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FEDQ = str(Path(sys.executable).with_name("fedq"))
ADMIN = "fedq_admin_bench-cli"
TARGET = 0.3
"""Seconds: issue 24's bound for ``fedq jobs --help`` and ``fedq jobs`` on the dev machine."""
JOB_TARGET = 0.35
"""Seconds: issue 36's bound for ``fedq job ID``."""
JOB = {"metadata": {"name": "bench"}, "spec": {"queue": "research.vision", "tasks": [{"resources": {"cpu": 1}}]}}


def wall(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(command: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall seconds of ``command`` and the median of its ratios to ``python -c pass`` run in turn."""
    baseline = [sys.executable, "-c", "pass"]
    wall(command, env)  # warm the page cache and the bytecode
    times, ratios = [], []
    for _ in range(runs):
        took, base = wall(command, env), wall(baseline, env)
        times.append(took)
        ratios.append(took / base)
    return statistics.median(times), statistics.median(ratios)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (each paired with a baseline)")
    parser.add_argument("--jobs", type=int, default=20, help="jobs the server holds while `fedq jobs` lists them")
    args = parser.parse_args()
    print(speed_marker())
    with tempfile.TemporaryDirectory(prefix="fedq-bench-cli-") as work:
        ca = ThrowawayCA(Path(work) / "tls", time.time())
        served = ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True)
        extra = ["--queues", str(ROOT / "configs" / "queues.yaml"), "--no-scheduler"]
        server = ServerProcess(
            None, Path(work) / "server.log", extra, env={"FEDQ_ADMIN_TOKEN": ADMIN}, tls=(served, ca.cert)
        )
        with server:
            with FedqClient(server.url, ADMIN, ca=str(ca.cert)) as client:
                ids = [client.submit(JOB, tenant="alice")["id"] for _ in range(args.jobs)]
            env = {**os.environ, "FEDQ_SERVER": server.url, "FEDQ_TOKEN": ADMIN, "FEDQ_CA": str(ca.cert)}
            commands = {
                "fedq --version": ([FEDQ, "--version"], None),
                "fedq jobs --help": ([FEDQ, "jobs", "--help"], TARGET),
                f"fedq jobs ({args.jobs} jobs, https)": ([FEDQ, "jobs"], TARGET),
                "fedq job ID (https)": ([FEDQ, "job", ids[0]], JOB_TARGET),
            }
            missed = False
            print(f"{'command':<34} {'median':>8} {'x python -c pass':>17}  target")
            for name, (command, target) in commands.items():
                took, ratio = measure(command, env, args.runs)
                verdict = "no target" if target is None else f"<= {target} s: {'met' if took <= target else 'MISSED'}"
                missed |= target is not None and took > target
                print(f"{name:<34} {took:>7.3f}s {ratio:>16.1f}x  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
