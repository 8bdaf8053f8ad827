"""``fedq cancel | hold | release | requeue | update``: what a user does to jobs after submitting them.

One job by id, several ids, every element of an array (``--array BASE``), or every job of a listing's
filters (``--state``, ``--queue``, ``--tenant``). Exit 0 when every job named was acted on (or was
already as asked), 1 when the server refused the request or any job in it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from federation.cli.context import client_from, output_of
from federation.cli.output import Column, emit, is_structured

if TYPE_CHECKING:
    from federation.client import FedqClient

EXIT_REFUSED = 1
ACTIONS = {
    "cancel": "cancel jobs: queued ones at once, running ones through their cluster's agent",
    "hold": "hold queued jobs: they keep their place in line but are not dispatched until released",
    "release": "release held jobs: they are considered again from their place in line",
    "requeue": "requeue jobs: running ones are stopped and wait again, Failed or Cancelled ones wait again",
}


def cmd_act(args: argparse.Namespace) -> int:
    selector = {"array": args.array, "state": args.state, "queue": args.queue, "tenant": args.tenant}
    chosen = {key: value for key, value in selector.items() if value is not None}
    if bool(args.ids) == bool(chosen):
        raise ValueError("name the jobs one way: ids, or --array BASE, or --state/--queue (with --tenant)")
    with client_from(args) as client:
        if len(args.ids) == 1:
            return _one(client, args)
        tally = client.act_on_many(args.action, ids=args.ids or None, **chosen)
    rows = [[tally["matched"], tally["changed"], tally["unchanged"], tally["refused"]]]
    emit(tally, output_of(args), columns=["MATCHED", "CHANGED", "UNCHANGED", "REFUSED"], rows=rows)
    if not is_structured(output_of(args)) and tally["refusals"]:
        emit(
            tally,
            output_of(args),
            columns=["ID", Column("REFUSED", fold=True)],
            rows=[[r["id"], r["message"]] for r in tally["refusals"]],
        )
    return EXIT_REFUSED if tally["refused"] else 0


def _one(client: FedqClient, args: argparse.Namespace) -> int:
    job_id = args.ids[0]
    if args.action == "cancel":
        result = client.cancel(job_id)
        row = [result["id"], result["state"], result["cancel_requested"]]
        emit(result, output_of(args), columns=["ID", "STATE", "CANCEL REQUESTED"], rows=[row])
    else:
        _acted(client.act(job_id, args.action), args)
    return 0


def _acted(result: dict[str, Any], args: argparse.Namespace) -> None:
    row = [result["id"], result["state"], result["changed"], result["reason"]]
    emit(result, output_of(args), columns=["ID", "STATE", "CHANGED", Column("REASON", fold=True)], rows=[row])


def cmd_update(args: argparse.Namespace) -> int:
    changes: dict[str, Any] = {"priority": args.priority, "queue": args.queue, "walltime": args.walltime}
    changes = {key: value for key, value in changes.items() if value is not None}
    if not changes:
        raise ValueError("nothing to update: give --priority, --queue or --walltime")
    with client_from(args) as client:
        _acted(client.update(args.id, **changes), args)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    for action, help_text in ACTIONS.items():
        parser = sub.add_parser(
            action,
            parents=[common],
            help=help_text,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=f"e.g. fedq {action} 000xsn8k1a2b3c4 000xsn8k9z8y7x6\n"
            f"     fedq {action} --array 000xsn8k1a2b3c4        # every element of an array\n"
            f"     fedq {action} --state Pending --queue research.vision",
        )
        parser.add_argument("ids", nargs="*", metavar="ID", help="the jobs' ids, e.g. 000xsn8k1a2b3c4")
        parser.add_argument("--array", metavar="BASE", help="every element of this array, e.g. 000xsn8k1a2b3c4")
        parser.add_argument("--state", help="every job in this state (with --queue: of that queue), e.g. Pending")
        parser.add_argument(
            "--queue", help="every job of this leaf queue (with --state: in that state), e.g. research.vision"
        )
        parser.add_argument(
            "--tenant", help="with an admin token and --state/--queue: only this tenant's jobs, e.g. alice"
        )
        parser.set_defaults(func=cmd_act, action=action)

    update = sub.add_parser(
        "update",
        parents=[common],
        help="change a queued job's priority, queue or walltime",
        epilog="e.g. fedq update 000xsn8k1a2b3c4 --priority 50 --queue research.nlp --walltime 30m",
    )
    update.add_argument("id", help="the job's id, e.g. 000xsn8k1a2b3c4")
    update.add_argument("--priority", type=int, help="its new priority, e.g. 50 (within the queue's bounds)")
    update.add_argument("--queue", help="a leaf queue of the tenant's, e.g. research.nlp")
    update.add_argument("--walltime", help="e.g. 30m; a tenant may only shorten it")
    update.set_defaults(func=cmd_update)
