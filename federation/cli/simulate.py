"""``fedq simulate``: replay a scenario YAML or an SWF trace through the real schedulers on a virtual clock."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING

from federation.cli.context import output_of, output_options, server_options
from federation.cli.output import emit
from federation.simulator.choices import POLICIES

if TYPE_CHECKING:
    from federation.simulator.engine import Progress as ProgressCallback
    from federation.simulator.scenario import Scenario

SHOWN_WARNINGS = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "simulate",
        parents=[output_options(), server_options()],
        epilog="e.g. fedq simulate configs/scenarios/hold.yaml --output-dir out/\n"
        "     fedq simulate --swf trace.swf.gz --clusters 4 --policy easy --output-dir out/ --plot\n"
        "     fedq simulate --export-history last-week.yaml --since 7d   # the federation's own jobs (admin)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="replay a scenario or an SWF trace through the schedulers on a virtual clock",
        description="Run the federation and member-cluster schedulers on simulated clusters and write\n"
        "jobs.csv and metrics.json (and PNG plots with --plot) into --output-dir.",
    )
    parser.add_argument("scenario", nargs="?", help="scenario YAML (clusters, queues, policy, jobs)")
    parser.add_argument("--swf", metavar="TRACE", help="an SWF trace (.swf or .swf.gz) instead of a scenario")
    parser.add_argument("--output-dir", help="where jobs.csv, metrics.json and the plots go (required to replay)")
    parser.add_argument(
        "--export-history",
        metavar="FILE",
        help="write the federation's recorded jobs since --since as a scenario (YAML; JSON for *.json), then stop",
    )
    parser.add_argument("--since", default="7d", help="--export-history: the window's start (7d ago, an ISO date)")
    parser.add_argument("--clusters", type=int, default=1, help="SWF: split the traced machine into N clusters")
    parser.add_argument("--nodes", type=int, help="SWF: node count of the machine (default: MaxNodes of the header)")
    parser.add_argument(
        "--queues", choices=["one", "group"], default="one", help="SWF: one queue, or one queue per SWF group"
    )
    parser.add_argument(
        "--tenants", choices=["user", "one"], default="user", help="SWF: a tenant per SWF user, or one for all jobs"
    )
    parser.add_argument("--limit", type=int, metavar="JOBS", help="SWF: replay only the first JOBS usable jobs")
    parser.add_argument("--strict", action="store_true", help="SWF: fail on a malformed line instead of skipping it")
    parser.add_argument("--config", help="federation.yaml whose keys set the policy (replaces a scenario's policy)")
    parser.add_argument("--policy", choices=POLICIES, help="reservation and backfill: fcfs, easy or conservative")
    parser.add_argument("--plot", action="store_true", help="also write utilization, tenant-share and wait PNGs")
    parser.set_defaults(func=lambda args: cmd_simulate(args, parser))


def cmd_simulate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from federation.logs import configure_logging  # the simulator is loaded only for a replay
    from federation.simulator.run import run_scenario

    # The simulated agents log every admission and launch at info: tens of thousands of lines per trace.
    configure_logging(os.environ.get("FEDQ_LOG_LEVEL") or "warning")
    if args.export_history:
        from federation.cli.whatif import export_history

        if args.scenario or args.swf:
            parser.error("--export-history writes a scenario: give no scenario or --swf with it")
        return export_history(args)
    if not args.output_dir:
        parser.error("--output-dir is required to replay")
    if bool(args.scenario) == bool(args.swf):
        parser.error("give either a scenario YAML or --swf TRACE")
    if args.clusters < 1 or (args.limit is not None and args.limit < 1) or (args.nodes is not None and args.nodes < 1):
        parser.error("--clusters, --nodes and --limit must be positive")
    scenario = _scenario(args)
    try:  # before the run, not after it: a replay can take minutes
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create the output directory {args.output_dir}: {exc.strerror}") from None
    started = perf_counter()
    with _progress_bar(len(scenario.jobs)) as progress:
        run = run_scenario(scenario, args.output_dir, plot=args.plot, progress=progress)
    wall = perf_counter() - started
    m = run.metrics
    summary = {
        "jobs": m["jobs"],
        "completed": m["completed"],
        "failed": m["failed"],
        "rejected": m["rejected"],
        "unschedulable": m["unschedulable"],
        "mean_wait": m["mean_wait"],
        "p95_wait": m["p95_wait"],
        "mean_bounded_slowdown": m["mean_bounded_slowdown"],
        "utilization": m["utilization"],
        "makespan": m["makespan"],
        "jain_fairness": m["jain_fairness"],
        "wall_seconds": round(wall, 3),
        "files": [str(path) for path in run.files],
    }
    emit(summary, output_of(args), columns=["metric", "value"], rows=[[k, _show(v)] for k, v in summary.items()])
    return 0


def _scenario(args: argparse.Namespace) -> Scenario:
    from federation.cli.output import say
    from federation.config import load_federation_config
    from federation.simulator.run import with_policy
    from federation.simulator.scenario import load_scenario
    from federation.simulator.swf import read_swf
    from federation.simulator.trace import scenario_from_swf

    config = load_federation_config(args.config) if args.config else None
    if args.swf:
        trace = read_swf(args.swf, strict=args.strict, limit=args.limit)
        for line_no, message in trace.warnings[:SHOWN_WARNINGS]:
            say(f"warning: {args.swf}:{line_no}: {message}", stderr=True)
        if len(trace.warnings) > SHOWN_WARNINGS:
            say(f"warning: {len(trace.warnings) - SHOWN_WARNINGS} more malformed lines", stderr=True)
        if trace.skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(trace.skip_reasons.items()))
            say(f"skipped {trace.skipped} jobs that cannot be replayed ({reasons})", stderr=True)
        scenario = scenario_from_swf(
            trace,
            config or load_federation_config(None),
            clusters=args.clusters,
            nodes=args.nodes,
            queue_by=args.queues,
            tenant_by=args.tenants,
        )
    else:
        scenario = load_scenario(Path(args.scenario))
        if config is not None:
            scenario.policy = config
    if args.policy:
        scenario.policy = with_policy(scenario.policy, args.policy)
    return scenario


@contextmanager
def _progress_bar(total: int) -> Iterator[ProgressCallback | None]:
    """Jobs finished so far, on a terminal only: piped output stays clean for scripts."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from federation.cli.output import errors

    if not errors.is_terminal:
        yield None
        return
    columns = (TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TextColumn("jobs"), TimeElapsedColumn())
    with Progress(*columns, console=errors, transient=True) as bar:
        task = bar.add_task("simulate", total=total)
        yield lambda done, _total: bar.update(task, completed=done)


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_show(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)
