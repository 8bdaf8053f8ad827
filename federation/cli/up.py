"""``fedq up``'s options; the run itself (``federation.up``) is imported only when it starts."""

from __future__ import annotations

import argparse
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
AGENTS = {"ray-local": CONFIGS / "agents" / "ray.yaml", "sim-local": CONFIGS / "agents" / "simulated.yaml"}


def _run(args: argparse.Namespace) -> int:
    from federation.up import run_up

    return run_up(args)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser(
        "up",
        help="run etcd, the server, two agents and a sample workload on this machine",
        epilog="e.g. fedq up --exit        # the sample workload, then stop\n"
        "     fedq up --store memory --agents sim-local --workload my-workload.yaml --keep",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument("--store", choices=["etcd", "memory"], default="etcd", help="a real etcd, or in-memory (faster)")
    up.add_argument("--port", type=int, default=8080, help="the API's port on 127.0.0.1, e.g. 8443")
    up.add_argument(
        "--workdir",
        help="where logs, etcd data and credentials go, kept on exit (default: a temp dir, removed on exit)",
    )
    up.add_argument("--keep", action="store_true", help="keep the temp data dir on exit (its path is printed at start)")
    up.add_argument(
        "--agents",
        nargs="+",
        choices=sorted(AGENTS),
        default=sorted(AGENTS),
        help="member agents to start, e.g. --agents sim-local",
    )
    up.add_argument(
        "--workload",
        default=str(CONFIGS / "examples" / "workload.yaml"),
        help="a list of {tenant, file} to submit, e.g. configs/examples/workload.yaml",
    )
    up.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the workload, e.g. 300")
    up.add_argument("--exit", action="store_true", help="stop everything once the workload is done")
    up.set_defaults(func=_run)
