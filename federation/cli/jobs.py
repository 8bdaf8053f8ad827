"""``fedq jobs | job | explain`` (submit: ``federation.cli.submit``; cancel and the other actions:
``federation.cli.actions``).
Tables show times in the local zone with how long ago (or ahead) they are from ``args.now``, which the
entry point reads once. ``fedq jobs`` lists as squeue does: unfinished jobs unless ``--all``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from federation.cli import watching
from federation.cli.context import client_from, output_of, reader_from
from federation.cli.folding import fold_arrays
from federation.cli.output import Column, emit, is_structured
from federation.cli.states import UNFINISHED, state_named
from federation.ids import DEFAULT_TASK
from policies.format import format_ago, format_resources, format_span, format_when, format_when_compact

if TYPE_CHECKING:
    from federation.client_base import ApiClient

LOG_LINES = 10
"""The last lines of its output ``fedq job`` shows (``fedq logs`` shows them all)."""
SORT_KEYS = ("id", "submit", "start", "end", "elapsed", "priority", "state", "name", "tenant", "queue", "cluster")


def listing_filters(client: ApiClient, args: argparse.Namespace) -> dict[str, Any]:
    """The server-side filters of ``fedq jobs``: states (none: any; several in one request), a known queue
    (an inner one lists its subtree), a tenant (``--mine``: the caller's own). ValueError for what is unknown."""
    states = [state_named(text) for text in args.state or []]
    if not states and not args.all:
        states = list(UNFINISHED)
    if args.queue is not None:
        known = _queue_paths(client.queues()["queues"])
        if args.queue not in known:
            raise ValueError(f"unknown queue {args.queue!r}: the queues are {', '.join(sorted(known))}")
    tenant = args.tenant
    if args.mine:
        me = client.request("GET", "/v1/whoami")  # whom the token names
        if me["role"] != "tenant":
            raise ValueError(f"--mine lists a tenant's own jobs: this is a {me['role']} token; use --tenant NAME")
        tenant = me["name"]
    return {"states": states, "queue": args.queue, "tenant": tenant}


def _queue_paths(nodes: list[dict[str, Any]]) -> set[str]:
    return {path for node in nodes for path in (node["path"], *_queue_paths(node["children"]))}


def cmd_jobs(args: argparse.Namespace) -> int:
    """Every matching job once: the API pages in index order (state, queue, id), and a job that changed
    state while the pages were read is listed by its later read; then sorted and cut to ``--limit``."""
    if args.watch:
        with client_from(args) as client:
            return watching.watch_table(client, args, listing_filters(client, args), JOB_COLUMNS, job_rows)
    with reader_from(args) as quick:
        filters = listing_filters(quick, args)
        listing = quick.jobs(state=filters["states"] or None, queue=filters["queue"], tenant=filters["tenant"])
        latest = {item["id"]: item for item in listing}
    items = sort_jobs(list(latest.values()), args.sort, args.now)
    items = (items if args.expand else fold_arrays(items))[: args.limit]
    shown = output_of(args)
    rows = job_rows(items, args.now, shown == "wide", args.start)
    emit({"items": items}, shown, columns=job_columns(args.start), rows=rows)
    return 0


def _elapsed(job: dict[str, Any], now: float) -> float | None:
    """How long its latest run took, or has taken so far."""
    start: float | None = job.get("start_time")
    if start is None:
        return None
    end: float | None = job.get("end_time")
    return (now if end is None else end) - start


def sort_jobs(items: list[dict[str, Any]], key: str, now: float) -> list[dict[str, Any]]:
    """By ``key`` (a leading '-': descending), ties by id (submit order); jobs without the value last."""
    descending, name = key.startswith("-"), key.lstrip("-")
    if name not in SORT_KEYS:
        raise ValueError(f"cannot sort by {name!r}: one of {', '.join(SORT_KEYS)} (a leading '-' for descending)")
    field = {"submit": "submit_time", "start": "start_time", "end": "end_time"}.get(name, name)

    def value(job: dict[str, Any]) -> Any:
        return _elapsed(job, now) if name == "elapsed" else job.get(field)

    by_id = sorted(items, key=lambda job: job["id"])
    present = sorted((job for job in by_id if value(job) is not None), key=value, reverse=descending)
    return present + [job for job in by_id if value(job) is None]


JOB_COLUMNS = [
    Column("ID"),
    Column("NAME", drop=3, fold=True),
    Column("TENANT", drop=5),
    Column("QUEUE", drop=4),
    Column("STATE"),
    Column("PRIO", wide=True),
    Column("AGE", drop=6),
    Column("SUBMITTED", wide=True),
    Column("STARTED", wide=True),
    Column("ENDED", wide=True),
    Column("ELAPSED", drop=1),
    Column("CLUSTER", drop=2),
    Column("REASON", fold=True),
]


START_AFTER = 5  # ``--start`` shows START after STATE


def job_columns(start: bool = False) -> list[Column]:
    """``JOB_COLUMNS``; ``start`` (``--start``, as squeue's): with START, when the scheduler projects a
    waiting job to start (its reservation's start, or its retry time)."""
    if not start:
        return JOB_COLUMNS
    return [*JOB_COLUMNS[:START_AFTER], Column("START"), *JOB_COLUMNS[START_AFTER:]]


def job_rows(items: list[dict[str, Any]], now: float, wide: bool = False, start: bool = False) -> list[list[Any]]:
    """A row per item; REASON is why a queued job waits (``wait``, its code; ``wide``: with its text),
    else what its last move said; ``start``: with START (``job_columns``)."""

    def when(job: dict[str, Any], field: str) -> str:
        return "" if job.get(field) is None else format_when_compact(job[field], now, local=True)

    def reason(job: dict[str, Any]) -> str:
        wait = job.get("wait")
        if wait is None:
            return str(job.get("reason", ""))
        return f"{wait['code']}: {wait['text']}" if wide else str(wait["code"])

    def projected(job: dict[str, Any]) -> list[str]:
        if not start:
            return []
        wait = job.get("wait") or {}
        return ["" if wait.get("start") is None else format_when_compact(wait["start"], now, local=True)]

    def elapsed(job: dict[str, Any]) -> str:
        took = _elapsed(job, now)
        return "" if took is None else format_span(took)

    return [
        [
            i["id"],
            i["name"],
            i["tenant"],
            i["queue"],
            i["state"],
            *projected(i),
            i["priority"],
            format_ago(i["submit_time"], now),
            when(i, "submit_time"),
            when(i, "start_time"),
            when(i, "end_time"),
            elapsed(i),
            i.get("cluster", ""),
            reason(i),
        ]
        for i in items
    ]


_TIMES = (("submitted", "submit_time"), ("started", "start_time"), ("ended", "end_time"))


def cmd_job(args: argparse.Namespace) -> int:
    if args.follow:
        with client_from(args) as client:
            return watching.follow_job(client, args.id, output_of(args), args.clock)
    with reader_from(args) as quick:
        job = quick.job(args.id)
        if is_structured(output_of(args)):
            emit(job, output_of(args))
            return 0
        output = list(quick.logs(args.id, tail=LOG_LINES))
    emit(job, output_of(args), columns=["FIELD", Column("VALUE", fold=True)], rows=detail_rows(job, args.now))
    wide = output_of(args) == "wide"
    show_time = format_when if wide else format_when_compact
    emit(
        job,
        output_of(args),
        columns=[
            "TIME",
            Column("FROM", drop=2),
            "TO",
            Column("REASON", fold=True),
            Column("CLUSTER", drop=1),
            Column("EPOCH", wide=True),
        ],
        rows=[
            [
                show_time(e["time"], args.now, local=True),
                e.get("from") or "",
                e["to"],
                e.get("reason", ""),
                e.get("cluster", ""),
                e.get("epoch", 0),
            ]
            for e in job.get("events", [])
        ],
        title="events",
    )
    if output:
        tasks = {line["task"] for line in output}
        rows = [[line["text"] if len(tasks) == 1 else f"[{line['task']}] {line['text']}"] for line in output]
        emit(
            job,
            output_of(args),
            columns=[Column(f"OUTPUT, LAST {len(rows)} LINES (ALL: fedq logs {args.id})", fold=True)],
            rows=rows,
        )
    return 0


def detail_rows(job: dict[str, Any], now: float) -> list[list[Any]]:
    """``fedq job``'s fields: who and where, its times and how long it ran, its resources."""
    fields = ["id", "name", "tenant", "queue", "state", "reason", "priority", "cluster", "epoch", "attempt"]
    rows = [[f, job.get(f)] for f in fields if job.get(f) not in (None, "")]
    if job.get("exit_code") is not None:
        rows.append(["exit code", job["exit_code"]])
    rows += [[f, format_when(job[t], now, local=True)] for f, t in _TIMES if job.get(t) is not None]
    took = _elapsed(job, now)
    if took is not None:
        rows.append(["duration" if job.get("end_time") is not None else "running for", format_span(took)])
    spec = job["spec"]
    if spec.get("walltime") is not None:
        rows.append(["walltime", format_span(spec["walltime"])])
    total: dict[str, float] = {}
    # The record's spec is validated and in base units; it leaves defaults out, but not a task's name and
    # replicas (docs/ui.md), so no model is needed here: importing pydantic's took ~0.2 s of ``fedq job``.
    for task in spec["tasks"]:
        name, replicas, resources = task.get("name", DEFAULT_TASK), task.get("replicas", 1), task.get("resources", {})
        rows.append([f"task {name}", f"{replicas} x {format_resources(resources)}"])
        for resource, amount in resources.items():
            total[resource] = total.get(resource, 0.0) + replicas * amount
    rows.append(["resources", format_resources(total)])
    return rows


def cmd_explain(args: argparse.Namespace) -> int:
    with reader_from(args) as quick:
        why = quick.request("GET", f"/v1/jobs/{args.id}/explain")
    if is_structured(output_of(args)):
        emit(why, output_of(args))
        return 0
    title = f"why is {why['id']} {why['state']}?"
    emit(why, output_of(args), columns=["", Column("", fold=True)], rows=explain_rows(why, args.now), title=title)
    return 0


def explain_rows(why: dict[str, Any], now: float) -> list[list[Any]]:
    rows = [
        ["job", f"{why['id']} ({why['state']}, queue {why['queue']}, tenant {why['tenant']})"],
        ["why", why["summary"]],
    ]
    if why.get("wait"):
        rows.append(["reason", f"{why['wait']['code']}: {why['wait']['text']}"])
    if "position" in why:
        p = why["position"]
        place = f"{p['in_queue']} of {p['queue_length']} in its queue"
        if p["overall"] is not None:
            place += f", {p['overall']} of {p['queued']} overall, in the order the last cycle took waiting jobs up"
        else:
            place += f" by priority and submit time (not among the {p['reached']} waiting jobs the last cycle took up)"
        rows.append(["position", place])
        rows += [["policy", f"{r['policy']}: {r['message']}"] for r in why["reasons"]]
        if why.get("reservation"):
            rows.append(["reservation", reservation_text(why["reservation"], now)])
        if why.get("projected_start"):
            start = why["projected_start"]
            rows.append(["projected start", f"{format_when(start['time'], now, local=True)}, {start['basis']}"])
        rows += [["cluster", f"{c['name']}: {c['state']}"] for c in why["clusters"]]
    for wait in why.get("dependencies", []):
        states = ", ".join(f"{count} {state}" for state, count in sorted(wait["states"].items()))
        rows.append(["dependency", f"{wait['condition']} on {wait['job']} ({states}): {wait['verdict']}"])
    return rows


def reservation_text(reservation: dict[str, Any], now: float) -> str:
    """``east (4 tasks) from <start> until <end>``: its ``clusters`` map each cluster to the tasks held there."""
    where = ", ".join(
        f"{name} ({held} task{'' if held == 1 else 's'})" for name, held in sorted(reservation["clusters"].items())
    )
    start, end = (format_when(reservation[k], now, local=True) for k in ("start", "end"))
    return f"{where} from {start} until {end}"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    jobs = sub.add_parser(
        "jobs",
        parents=[common],
        help="list jobs (unfinished ones unless --all), as squeue",
        formatter_class=raw,
        epilog="e.g. fedq jobs                              # your unfinished jobs\n"
        "     fedq jobs --state running --state pending --queue research --sort=-priority\n"
        "     fedq jobs --all --mine --limit 20 -o wide\n"
        "     fedq jobs --watch --state Running       # a live table",
    )
    jobs.add_argument("--all", action="store_true", help="finished jobs too (kept for store.keepFinished)")
    jobs.add_argument(
        "--state", action="append", metavar="STATE", help="only this state, any case; repeat for more, e.g. running"
    )
    jobs.add_argument("--queue", help="only this queue and the queues under it, e.g. research")
    jobs.add_argument("--tenant", help="with an admin token: only this tenant's jobs, e.g. alice")
    jobs.add_argument("--mine", action="store_true", help="only the jobs of the token's own tenant")
    jobs.add_argument("--limit", type=int, metavar="N", help="show the first N after sorting, e.g. 20")
    jobs.add_argument(
        "--sort",
        default="id",
        metavar="KEY",
        help=f"one of {', '.join(SORT_KEYS)}; '-' first for descending, e.g. --sort=-priority (default: id)",
    )
    jobs.add_argument("--watch", action="store_true", help="a live table, changed as jobs change (Ctrl-C to stop)")
    jobs.add_argument(
        "--expand", action="store_true", help="a row per array element (default: an array's waiting elements fold)"
    )
    jobs.add_argument("--start", action="store_true", help="show START: when a waiting job is projected to start")
    jobs.set_defaults(func=cmd_jobs)

    job = sub.add_parser(
        "job",
        parents=[common],
        help="show one job: times, resources, events and its last output lines",
        formatter_class=raw,
        epilog="e.g. fedq job 000xsn8k1a2b3c4\n"
        "     fedq job 000xsn8k1a2b3c4 --follow   # exit 0 if it succeeds, 4 if not",
    )
    job.add_argument("id", help="the job's id, from `fedq submit` or `fedq jobs`")
    job.add_argument("--follow", action="store_true", help="print its events as they happen, until it ends")
    job.set_defaults(func=cmd_job)

    explain = sub.add_parser(
        "explain",
        parents=[common],
        help="why a job waits, and when it may start",
        epilog="e.g. fedq explain 000xsn8k1a2b3c4",
    )
    explain.add_argument("id", help="the job's id, e.g. 000xsn8k1a2b3c4")
    explain.set_defaults(func=cmd_explain)
