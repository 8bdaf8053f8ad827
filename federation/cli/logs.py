"""``fedq logs ID``: a job's output, as ``kubectl logs`` prints a pod's. Lines go to stdout as the job
printed them (``-o json|yaml``: one object per line with its time, task and stream); ``--follow``
prints new ones as they come, until the job has ended and its output is complete."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from federation.cli.context import client_from, output_of


def _print(line: dict[str, Any], output: str, prefix: bool) -> None:
    if output == "json":
        import json

        text = json.dumps(line)
    elif output == "yaml":
        import yaml

        text = "---\n" + yaml.safe_dump(line, sort_keys=False).rstrip("\n")
    else:
        text = f"[{line['task']}] {line['text']}" if prefix else line["text"]
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def cmd_logs(args: argparse.Namespace) -> int:
    from policies.units import parse_duration

    since = None if args.since is None else parse_duration(args.since)
    if since is not None and since <= 0:
        raise ValueError(f"--since {args.since}: give a positive duration, e.g. 10m")
    with client_from(args) as client:
        lines = client.logs(
            args.id,
            task=args.task,
            stream="stderr" if args.stderr else None,
            tail=args.tail,
            since=since,
            epoch=args.epoch,
            follow=args.follow,
        )
        for line in lines:
            _print(line, output_of(args), args.prefix)
    return 0


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of lines, e.g. 100")
    return int(value)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    logs = sub.add_parser(
        "logs",
        parents=[common],
        help="print a job's output (stdout and stderr of its tasks), e.g. fedq logs ID --follow",
        description="Print a job's output, oldest first: its latest run's stdout and stderr lines, by the time "
        "printed. Example: fedq logs 000xsn8k1a2b3c4 --task worker-0 --tail 100 --follow",
    )
    logs.add_argument("id", help="the job's id, e.g. 000xsn8k1a2b3c4 (an array element: 000xsn8k1a2b3c4-3)")
    logs.add_argument("--task", help="one task only: its name (all replicas), index or name-index, e.g. worker-0")
    logs.add_argument("--follow", "-f", action="store_true", help="then print new lines as they come, until it ends")
    logs.add_argument("--tail", type=_count, metavar="N", help="only the last N lines, e.g. --tail 100")
    logs.add_argument("--since", metavar="D", help="only lines printed in the last D, e.g. --since 10m")
    logs.add_argument("--stderr", action="store_true", help="only what the tasks wrote to stderr")
    logs.add_argument("--epoch", type=_count, metavar="N", help="an earlier run of the job (default: its latest)")
    logs.add_argument("--prefix", action="store_true", help="start each line with its task's name, e.g. [worker-0]")
    logs.set_defaults(func=cmd_logs)
