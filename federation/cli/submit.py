"""``fedq submit FILE``: fedq's YAML/JSON jobs, a Slurm batch script or an HTCondor submit description
(``federation.submitfiles``), with sbatch-style overrides (``--queue --priority --walltime --array
--name --hold``) applied over what the file says, as sbatch's command line overrides its ``#SBATCH``
lines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from federation.cli import watching
from federation.cli.context import client_from, output_of
from federation.cli.output import emit, is_structured, say

OVERRIDES = ("queue", "priority", "walltime", "array", "name")


def read_documents(path: str) -> list[Any]:
    """YAML (one or many documents) or JSON from a file or '-' for stdin."""
    return _documents(path, _read(path))


def _documents(path: str, text: str) -> list[Any]:
    import yaml

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


def _read(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None


def read_submission(path: str) -> tuple[list[Any], bool]:
    """The file's job documents and whether it asks to be held (``#SBATCH --hold``, ``hold = true``);
    what a script's directives say but fedq keeps elsewhere is said on stderr."""
    from federation.submitfiles import kind_of, read

    text = _read(path)
    kind = kind_of(path, text)
    if kind == "yaml":
        return _documents(path, text), False
    submission = read(path, text, kind)
    for note in submission.notes:
        say(f"note: {note}", stderr=True)
    return [submission.manifest], submission.hold


def apply_overrides(docs: list[Any], args: argparse.Namespace) -> list[Any]:
    """Each document with the command line's overrides over it; ValueError for one that cannot take them."""
    given = {name: getattr(args, name) for name in OVERRIDES if getattr(args, name) is not None}
    if not given:
        return docs
    if "name" in given and len(docs) > 1:
        raise ValueError(f"--name names one job: {args.file} holds {len(docs)} (they name each other)")
    changed = []
    for number, doc in enumerate(docs):
        if not isinstance(doc, dict) or not isinstance(doc.get("spec", {}), dict):
            raise ValueError(f"{args.file}: document {number + 1} is not a job (a mapping with metadata and spec)")
        spec = dict(doc.get("spec", {}))
        metadata = dict(doc.get("metadata") or {})
        for field in ("queue", "priority", "walltime", "array"):
            if field in given:
                spec[field] = given[field]
        if "name" in given:
            metadata["name"] = given["name"]
        changed.append({**doc, "metadata": metadata, "spec": spec})
    return changed


def cmd_submit(args: argparse.Namespace) -> int:
    """One document prints the API's answer as ``FedqClient.submit`` returns it (``{"id"}``, an array
    ``{"id", "ids"}``); several, ``{"ids"}`` as the API answers a bulk request."""
    docs, held = read_submission(args.file)
    docs = apply_overrides(docs, args)
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("spec"), dict) and not doc["spec"].get("queue"):
            raise ValueError(f"{args.file}: no queue: give --queue QUEUE (or #SBATCH --partition, accounting_group)")
    options = {"tenant": args.tenant, "allow_unschedulable": args.allow_unschedulable, "hold": args.hold or held}
    with client_from(args) as client:
        if len(docs) == 1:
            answer: dict[str, Any] = dict(client.submit(docs[0], **options))
        else:
            answer = {"ids": client.submit_many(docs, **options)}
        ids = answer.get("ids") or [answer["id"]]
        if args.wait and is_structured(output_of(args)):
            return watching.wait_for(client, ids, output_of(args), args.tenant)
        emit(answer, output_of(args), columns=["SUBMITTED"], rows=[[job_id] for job_id in ids])
        return watching.wait_for(client, ids, "table", args.tenant) if args.wait else 0


def _array(text: str) -> dict[str, int]:
    from federation.submitfiles.slurm import array

    try:
        return array(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    submit = sub.add_parser(
        "submit",
        parents=[common],
        help="submit jobs from a YAML/JSON file, a Slurm batch script or an HTCondor submit file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="FILE is fedq YAML/JSON, a Slurm script (#! and #SBATCH lines: -n -c --mem --mem-per-cpu\n"
        "-t --gres=gpu:N --gpus-per-task -p -a -d -J -H -o -e) or an HTCondor submit description (executable,\n"
        "arguments, request_cpus, request_memory, request_gpus, accounting_group, batch_name, hold, queue N),\n"
        "told apart by extension or content. What cannot be mapped is refused with its line. The flags\n"
        "below override the file, as sbatch's do.",
        epilog="e.g. fedq submit configs/examples/hello.yaml\n"
        "     fedq submit configs/examples/sbatch-hello.sh --queue research.vision\n"
        "     fedq submit sweep.yaml --array 0-99%10 --priority 5 --walltime 30m\n"
        "     fedq submit pipeline.yaml --wait          # exit 0 if every job succeeded, 4 if not\n"
        "     fedq submit job.yaml --tenant alice       # an admin submitting as alice",
    )
    submit.add_argument("file", help="a job (or several: YAML documents, or {jobs: [...]}), a script, '-' for stdin")
    submit.add_argument("--tenant", help="with an admin token: the tenant to submit as, e.g. alice")
    submit.add_argument(
        "--allow-unschedulable",
        action="store_true",
        help="accept jobs no joined cluster could run, to wait for a cluster that has not joined yet",
    )
    submit.add_argument("--hold", action="store_true", help="submit held: they wait in line until `fedq release`")
    submit.add_argument(
        "--wait", action="store_true", help="block until the jobs end; exit 0 if all succeeded, 4 otherwise"
    )
    submit.add_argument("--queue", help="the queue, over the file's (sbatch's --partition), e.g. research.vision")
    submit.add_argument("--priority", type=int, help="the priority, over the file's, e.g. 5")
    submit.add_argument("--walltime", help="the walltime, over the file's, e.g. 30m or 2h")
    submit.add_argument(
        "--array", type=_array, metavar="0-B[%N]", help="an array of B+1, at most N running at once, e.g. 0-99%%10"
    )
    submit.add_argument("--name", help="the job's name, over the file's, e.g. sweep")
    submit.set_defaults(func=cmd_submit)
