"""``fedq whatif``: replay the federation's own history with a candidate config and print the difference;
and the export alone (``fedq simulate --export-history FILE``)."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from federation.cli.context import client_from, output_of
from federation.cli.output import emit, say
from federation.simulator.choices import POLICIES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    parser = sub.add_parser(
        "whatif",
        parents=[common],
        epilog="e.g. fedq whatif --since 14d --queues candidate-queues.yaml\n"
        "     fedq whatif --since 7d --config candidate.yaml --policy conservative -o json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="replay the recorded jobs of a window with a candidate config and compare (admin)",
        description="Export the jobs submitted since --since (GET /v1/admin/history), replay them through the\n"
        "schedulers as configured now (the baseline) and with the candidate's changes, and print per tenant\n"
        "and per queue the waits, bounded slowdown, share against fair share and preemptions of both, and how\n"
        "closely the baseline reproduced the recorded starts (docs/whatif.md).",
    )
    parser.add_argument("--since", default="7d", help="the window's start: 7d (ago), an ISO date, Unix seconds")
    parser.add_argument("--from", dest="source", metavar="FILE", help="an export file instead of the server")
    parser.add_argument("--config", help="candidate federation.yaml (its scheduling keys replace the current ones)")
    parser.add_argument("--queues", help="candidate queue tree (configs/queues.yaml's schema)")
    parser.add_argument("--clusters", help="candidate clusters (a scenario's clusters: list, or {clusters: [...]})")
    parser.add_argument("--policy", choices=POLICIES, help="candidate reservation and backfill")
    parser.add_argument("--output-dir", help="keep both runs' files here (baseline/, candidate/); default: none kept")
    parser.add_argument("--plot", action="store_true", help="also write each run's PNG plots (needs --output-dir)")
    parser.set_defaults(func=lambda args: cmd_whatif(args, parser))


def fetch_history(args: argparse.Namespace, since: str) -> dict[str, Any]:
    """The export from the server, as JSON."""
    with client_from(args) as client:
        document: dict[str, Any] = client.request("GET", "/v1/admin/history", params={"since": since}, timeout=600)
    return document


def export_history(args: argparse.Namespace) -> int:
    """``fedq simulate --export-history FILE --since 30d``: the export written as YAML (JSON for *.json)."""
    import json

    import yaml

    document = fetch_history(args, args.since)
    path = Path(args.export_history)
    if path.suffix == ".json":
        text = json.dumps(document, indent=1)
    else:
        text = yaml.safe_dump(document, sort_keys=False)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror}") from None
    say(f"wrote {len(document['jobs'])} jobs submitted since {args.since} to {path}", stderr=True)
    return 0


def cmd_whatif(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from federation.logs import configure_logging
    from federation.whatif.replay import whatif

    configure_logging(os.environ.get("FEDQ_LOG_LEVEL") or "warning")  # the simulated agents' info lines
    if args.plot and not args.output_dir:
        parser.error("--plot writes files: give --output-dir")
    changes = _changes(args)
    document = _document(args)
    if args.output_dir:
        result = whatif(document, changes, Path(args.output_dir), plot=args.plot)
    else:
        with tempfile.TemporaryDirectory(prefix="fedq-whatif-") as scratch:
            result = whatif(document, changes, Path(scratch))
        del result["files"]
    output = output_of(args)
    if output in ("json", "yaml"):
        emit(result, output)
    else:
        _print(result, output)
    return 0


def _document(args: argparse.Namespace) -> dict[str, Any]:
    from federation.config import load_yaml_file

    if not args.source:
        return fetch_history(args, args.since)
    document = load_yaml_file(args.source)
    if not isinstance(document, dict):
        raise ValueError(f"{args.source}: not a history export (fedq simulate --export-history)")
    return document


def _changes(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from federation.config import load_federation_config, load_yaml_file
    from federation.models import QueueTreeConfig
    from federation.whatif.replay import Changes

    queues = clusters = None
    try:
        config = load_federation_config(args.config) if args.config else None
    except ValidationError as exc:
        raise ValueError(f"{args.config}: {exc}") from None
    if args.queues:
        try:
            tree = QueueTreeConfig.model_validate(load_yaml_file(args.queues))
        except ValidationError as exc:
            raise ValueError(f"{args.queues}: {exc}") from None
        queues = tree.model_dump(mode="json", by_alias=True, exclude_defaults=True)["queues"]
    if args.clusters:
        found = load_yaml_file(args.clusters)
        clusters = found.get("clusters") if isinstance(found, dict) else found
        if not isinstance(clusters, list):
            raise ValueError(f"{args.clusters}: a list of clusters (as a scenario's clusters:), or {{clusters: [...]}}")
    return Changes(config=config, queues=queues, clusters=clusters, policy=args.policy)


def _print(result: dict[str, Any], output: str) -> None:
    from federation.cli.output import Column

    window, fid = result["window"], result["fidelity"]
    say(
        f"window: {window['jobs']} jobs ({_counts(window['runtimes'])}); left out {window['left_out']} still "
        f"unfinished at its start; candidate changes: {', '.join(result['changes']) or 'nothing'}"
    )
    if fid["compared"]:
        say(
            f"baseline fidelity: start error over {fid['compared']} jobs median {_s(fid['median'])}, "
            f"p90 {_s(fid['p90'])}, max {_s(fid['max'])} (cycle period {_s(result['cycle_period'])}); "
            f"started only in the record {fid['only_recorded']}, only in the replay {fid['only_replayed']}"
        )
    else:
        say("baseline fidelity: no job started both in the record and in the replay: nothing to measure")
    util = result["utilization"]
    say(f"utilization: baseline {_shares(util['baseline'])} -> candidate {_shares(util['candidate'])}")
    columns = [
        Column("GROUP"),
        Column("JOBS"),
        Column("MEAN WAIT"),
        Column("P95 WAIT"),
        Column("SLOWDOWN"),
        Column("SHARE/FAIR"),
        Column("PREEMPTED"),
    ]
    for kind in ("tenants", "queues"):
        rows = [_row(name, sides) for name, sides in result[kind].items()]
        emit(result, output, columns=columns, rows=rows, title=f"per {kind[:-1]}: baseline -> candidate (change)")


def _row(name: str, sides: dict[str, dict[str, Any]]) -> list[str]:
    old, new, change = sides["baseline"], sides["candidate"], sides["change"]

    def moved(field: str, show: Any = None) -> str:
        show = show or _s
        delta = change[field]
        sign = "" if delta is None else f" ({'+' if delta >= 0 else '-'}{show(abs(delta))})"
        return f"{show(old[field])} -> {show(new[field])}{sign}"

    share = f"{_share(old)} -> {_share(new)}"
    return [
        name,
        str(old["jobs"]),
        moved("mean_wait"),
        moved("p95_wait"),
        moved("mean_bounded_slowdown", _x),
        share,
        f"{old['preempted']} -> {new['preempted']}",
    ]


def _s(seconds: float | None) -> str:
    from policies.units import format_duration

    if seconds is None:
        return "-"
    return f"{seconds:.2f}s" if seconds < 60 else format_duration(seconds)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _share(side: dict[str, Any]) -> str:
    return f"{_pct(side['usage_share'])}/{_pct(side['fair_share'])}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _shares(values: dict[str, float | None]) -> str:
    return ", ".join(f"{name} {_pct(value)}" for name, value in values.items()) or "-"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {note}" for note, n in sorted(counts.items())) or "none"
