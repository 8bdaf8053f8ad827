"""``fedq submit | jobs | job | explain`` (cancel and the other actions: ``federation.cli.actions``).
Tables show times in the local zone with how long ago (or ahead) they are from ``args.now``, which the
entry point reads once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from federation.cli import watching
from federation.cli.context import client_from, output_of
from federation.cli.output import emit
from federation.models.job import TaskSpec
from policies.format import format_resources, format_when
from policies.units import format_duration


def read_documents(path: str) -> list[Any]:
    """YAML (one or many documents) or JSON from a file or '-' for stdin."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    try:
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML/JSON: {exc}") from None
    if not docs:
        raise ValueError(f"{path}: no job documents found")
    expanded: list[Any] = []
    for doc in docs:
        expanded.extend(doc["jobs"] if isinstance(doc, dict) and set(doc) == {"jobs"} else [doc])
    return expanded


def cmd_submit(args: argparse.Namespace) -> int:
    docs = read_documents(args.file)
    with client_from(args) as client:
        if len(docs) == 1:
            result = client.submit(
                docs[0], tenant=args.tenant, allow_unschedulable=args.allow_unschedulable, hold=args.hold
            )
            ids = result.get("ids") or [result["id"]]
        else:
            ids = client.submit_many(
                docs, tenant=args.tenant, allow_unschedulable=args.allow_unschedulable, hold=args.hold
            )
        if args.wait and output_of(args) != "table":
            return watching.wait_for(client, ids, output_of(args), args.tenant)
        emit({"ids": ids}, output_of(args), columns=["submitted"], rows=[[job_id] for job_id in ids])
        return watching.wait_for(client, ids, "table", args.tenant) if args.wait else 0


def cmd_jobs(args: argparse.Namespace) -> int:
    """Every matching job once, in id (= submit) order: the API pages in index order (state, queue,
    id), and a job that changed state while the pages were read is listed by its later read."""
    with client_from(args) as client:
        if args.watch:
            return watching.watch_table(client, args, output_of(args), JOB_COLUMNS, _job_rows)
        latest = {item["id"]: item for item in client.jobs(state=args.state, queue=args.queue, tenant=args.tenant)}
    items = [latest[job_id] for job_id in sorted(latest)]
    emit({"items": items}, output_of(args), columns=JOB_COLUMNS, rows=_job_rows(items, args.now))
    return 0


JOB_COLUMNS = ["ID", "NAME", "TENANT", "QUEUE", "STATE", "PRIO", "SUBMITTED", "CLUSTER", "REASON"]


def _job_rows(items: list[dict[str, Any]], now: float) -> list[list[Any]]:
    return [
        [
            i["id"],
            i["name"],
            i["tenant"],
            i["queue"],
            i["state"],
            i["priority"],
            format_when(i["submit_time"], now, local=True),
            i.get("cluster", ""),
            i.get("reason", ""),
        ]
        for i in items
    ]


_TIMES = (("submitted", "submit_time"), ("started", "start_time"), ("ended", "end_time"))


def cmd_job(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        if args.follow:
            return watching.follow_job(client, args.id, output_of(args), args.now)
        job = client.job(args.id)
    if output_of(args) != "table":
        emit(job, output_of(args))
        return 0
    fields = [
        "id",
        "name",
        "tenant",
        "queue",
        "state",
        "reason",
        "priority",
        "cluster",
        "epoch",
        "attempt",
        "exit_code",
    ]
    rows = [[f, job.get(f)] for f in fields]
    rows += [[f, format_when(job[t], args.now, local=True)] for f, t in _TIMES if job.get(t) is not None]
    spec = job["spec"]
    if spec.get("walltime") is not None:
        rows.append(["walltime", format_duration(spec["walltime"])])
    for task in map(TaskSpec.model_validate, spec["tasks"]):  # the detail leaves defaults out
        rows.append([f"task {task.name}", f"{task.replicas} x {format_resources(task.resources)}"])
    emit(job, "table", columns=["FIELD", "VALUE"], rows=rows, title=f"job {job['id']}")
    emit(
        job,
        "table",
        columns=["TIME", "FROM", "TO", "REASON", "CLUSTER", "EPOCH"],
        rows=[
            [
                format_when(e["time"], args.now, local=True),
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
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        why = client.request("GET", f"/v1/jobs/{args.id}/explain")
    if output_of(args) != "table":
        emit(why, output_of(args))
        return 0
    rows = [
        ["job", f"{why['id']} ({why['state']}, queue {why['queue']}, tenant {why['tenant']})"],
        ["why", why["summary"]],
    ]
    if "position" in why:
        p = why["position"]
        place = f"{p['in_queue']} of {p['queue_length']} in its queue"
        if p["overall"] is not None:
            place += f", {p['overall']} of {p['queued']} overall, in the order the last cycle took waiting jobs up"
        else:
            place += f" by priority and submit time (not among the {p['reached']} waiting jobs the last cycle took up)"
        rows.append(["position", place])
        rows += [["policy", f"{r['policy']}: {r['message']}"] for r in why["reasons"]]
        if why.get("projected_start"):
            start = why["projected_start"]
            rows.append(["projected start", f"{format_when(start['time'], args.now, local=True)}, {start['basis']}"])
        rows += [["cluster", f"{c['name']}: {c['state']}"] for c in why["clusters"]]
    for wait in why.get("dependencies", []):
        states = ", ".join(f"{count} {state}" for state, count in sorted(wait["states"].items()))
        rows.append(["dependency", f"{wait['condition']} on {wait['job']} ({states}): {wait['verdict']}"])
    emit(why, "table", columns=["", ""], rows=rows, title=f"why is {why['id']} {why['state']}?")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    submit = sub.add_parser("submit", parents=[common], help="submit jobs from a YAML/JSON file or '-'")
    submit.add_argument("file")
    submit.add_argument("--tenant", help="with an admin token: the tenant to submit as")
    submit.add_argument(
        "--allow-unschedulable",
        action="store_true",
        help="accept jobs no joined cluster could run, to wait for a cluster that has not joined yet",
    )
    submit.add_argument("--hold", action="store_true", help="submit held: they wait in line until `fedq release`")
    submit.add_argument(
        "--wait", action="store_true", help="block until the jobs end; exit 0 if all succeeded, 4 otherwise"
    )
    submit.set_defaults(func=cmd_submit)

    jobs = sub.add_parser("jobs", parents=[common], help="list jobs")
    jobs.add_argument("--state")
    jobs.add_argument("--queue")
    jobs.add_argument("--tenant")
    jobs.add_argument("--watch", action="store_true", help="a live table, changed as jobs change (Ctrl-C to stop)")
    jobs.set_defaults(func=cmd_jobs)

    job = sub.add_parser("job", parents=[common], help="show one job with its events")
    job.add_argument("id")
    job.add_argument("--follow", action="store_true", help="print its events as they happen, until it ends")
    job.set_defaults(func=cmd_job)

    explain = sub.add_parser("explain", parents=[common], help="why a job waits, and when it may start")
    explain.add_argument("id")
    explain.set_defaults(func=cmd_explain)
