"""``fedq job ID --follow``, ``fedq jobs --watch`` and ``fedq submit --wait``: the job event streams at the
terminal. Each survives a server restart: the client resumes after the last revision it read."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from rich.live import Live
from rich.table import Table

from federation.cli.output import console, emit
from federation.client import FedqClient
from federation.follow import TERMINAL
from policies.format import format_when

EXIT_NOT_SUCCEEDED = 4
"""``submit --wait`` and ``job --follow``: a job ended other than Succeeded (as ``sbatch --wait`` fails)."""


def _printer(output: str, now: float) -> Callable[[dict[str, Any]], None]:
    """How one item goes out as it comes: a line of text, a JSON line, or a YAML document."""

    def text(event: dict[str, Any]) -> None:
        moved = f"{event.get('from') or '-'} -> {event['to']}"
        where = f" on {event['cluster']} (epoch {event['epoch']})" if event.get("cluster") else ""
        reason = f": {event['reason']}" if event.get("reason") else ""
        console.print(f"{format_when(event['time'], now, local=True)}  {moved}{where}{reason}", highlight=False)

    def as_json(item: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(item, sort_keys=True) + "\n")
        sys.stdout.flush()

    def as_yaml(item: dict[str, Any]) -> None:
        sys.stdout.write(yaml.safe_dump(item, sort_keys=False, explicit_start=True))
        sys.stdout.flush()

    return {"json": as_json, "yaml": as_yaml}.get(output, text)


def follow_job(client: FedqClient, job_id: str, output: str, now: float) -> int:
    """Each transition once, as it happens, until the job has ended; its end sets the exit code."""
    show = _printer(output, now)
    for event in client.events(job_id):
        show(event)
        if event["to"] in TERMINAL and event["state"] in TERMINAL:
            return 0 if event["state"] == "Succeeded" else EXIT_NOT_SUCCEEDED
    return EXIT_NOT_SUCCEEDED  # the record was removed before it was seen to end


def wait_for(client: FedqClient, ids: Sequence[str], output: str, tenant: str | None) -> int:
    """Block until every job has ended, then show how each did: 0 if all succeeded."""
    ended = client.wait(ids, tenant=tenant)
    emit(
        {"ids": list(ids), "ended": ended},
        output,
        columns=["ID", "ENDED"],
        rows=[[job_id, state] for job_id, state in ended.items()],
    )
    return 0 if all(state == "Succeeded" for state in ended.values()) else EXIT_NOT_SUCCEEDED


def watch_table(
    client: FedqClient,
    args: argparse.Namespace,
    output: str,
    columns: Sequence[str],
    rows: Callable[[list[dict[str, Any]], float], list[list[Any]]],
) -> int:
    """The listing as a live table, changed in place as the stream says (``-o json|yaml``: the stream's
    messages, one per line or document); until Ctrl-C."""
    filters = {"state": args.state, "queue": args.queue, "tenant": args.tenant}
    stream = client.watch_jobs(**filters)
    next(stream)  # the start: every change after it comes on the stream, so a listing read now misses none
    if output != "table":
        show = _printer(output, args.now)
        for message in stream:
            show(message)
        return 0
    jobs = {item["id"]: item for item in client.jobs(**filters)}

    def render() -> Table:
        table = Table(show_edge=False, header_style="bold", title=f"{len(jobs)} jobs (Ctrl-C to stop)")
        for column in columns:
            table.add_column(column)
        for row in rows([jobs[job_id] for job_id in sorted(jobs)], args.now):
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        return table

    with Live(render(), console=console, auto_refresh=False) as live:
        for message in stream:
            for change in message["changes"]:
                job = change["job"]
                if change["type"] == "put":
                    jobs[job["id"]] = job
                else:
                    jobs.pop(job["id"], None)
            live.update(render(), refresh=True)
    return 0
