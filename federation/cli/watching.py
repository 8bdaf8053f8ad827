"""``fedq job ID --follow``, ``fedq jobs --watch`` and ``fedq submit --wait``: the job event streams at the
terminal. Each survives a server restart: the client resumes after the last revision it read. They print
for as long as they run, so each line and each redraw reads the clock (``args.clock``) for its relative
times: an event printed as it happens is "now", not "in 2s" from when the command started."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from federation.cli import output as out
from federation.cli.context import output_of
from federation.cli.output import Column, emit, is_structured
from policies.format import format_when

if TYPE_CHECKING:
    from federation.client import FedqClient

EXIT_NOT_SUCCEEDED = 4
"""``submit --wait`` and ``job --follow``: a job ended other than Succeeded (as ``sbatch --wait`` fails)."""


def _printer(output: str, clock: Callable[[], float]) -> Callable[[dict[str, Any]], None]:
    """How one item goes out as it comes: a line of text, a JSON line, or a YAML document."""

    def text(event: dict[str, Any]) -> None:
        moved = f"{event.get('from') or '-'} -> {event['to']}"
        where = f" on {event['cluster']} (epoch {event['epoch']})" if event.get("cluster") else ""
        reason = f": {event['reason']}" if event.get("reason") else ""
        when = format_when(event["time"], clock(), local=True)
        out.console.print(f"{when}  {moved}{where}{reason}", highlight=False)

    def as_json(item: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(item, sort_keys=True) + "\n")
        sys.stdout.flush()

    def as_yaml(item: dict[str, Any]) -> None:
        import yaml

        sys.stdout.write(yaml.safe_dump(item, sort_keys=False, explicit_start=True))
        sys.stdout.flush()

    return {"json": as_json, "yaml": as_yaml}.get(output, text)


def follow_job(client: FedqClient, job_id: str, output: str, clock: Callable[[], float]) -> int:
    """Each transition once, as it happens, until the job has ended; its end sets the exit code."""
    from federation.follow import TERMINAL

    show = _printer(output, clock)
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
    filters: dict[str, Any],
    columns: Sequence[str | Column],
    rows: Callable[[list[dict[str, Any]], float], list[list[Any]]],
) -> int:
    """The listing as a live table, changed in place as the stream says (``-o json|yaml``: the stream's
    messages, one per line or document); until Ctrl-C. ``filters`` as ``jobs.listing_filters`` makes
    them: one state is the stream's filter, several are applied here. The table is drawn again each
    second as well, so its ages and elapsed times move while nothing changes."""
    from rich.live import Live

    states = filters["states"]
    server_side = {"state": states[0] if len(states) == 1 else None, "queue": filters["queue"]}
    server_side["tenant"] = filters["tenant"]
    stream = client.watch_jobs(**server_side)
    next(stream)  # the start: every change after it comes on the stream, so a listing read now misses none
    shown = output_of(args)
    if is_structured(shown):
        show = _printer(shown, args.clock)
        for message in stream:
            show(message)
        return 0
    listing = client.jobs(state=states or None, queue=filters["queue"], tenant=filters["tenant"])
    jobs = {item["id"]: item for item in listing}
    console = out.console
    changing = threading.Lock()  # Live redraws from its own thread while the stream's changes come in

    def render() -> Any:
        with changing:
            listed = [jobs[job_id] for job_id in sorted(jobs)]
        title = f"{len(listed)} jobs (Ctrl-C to stop)"
        return out.table(columns, rows(listed, args.clock()), title, width=console.width, wide=shown == "wide")

    with Live(get_renderable=render, console=console, refresh_per_second=1) as live:
        for message in stream:
            with changing:
                for change in message["changes"]:
                    job = change["job"]
                    if change["type"] == "put" and (not states or job["state"] in states):
                        jobs[job["id"]] = job
                    else:
                        jobs.pop(job["id"], None)
            live.refresh()
    return 0
