"""``fedq queues [apply FILE]`` and ``fedq token create``."""

from __future__ import annotations

import argparse
from typing import Any

from federation.cli.context import client_from, output_of
from federation.cli.output import emit
from federation.config import load_yaml_file
from policies.format import format_labels, format_resources, format_span


def _flatten(nodes: list[dict[str, Any]], depth: int = 0) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for node in nodes:
        rows.append(
            [
                "  " * depth + node["name"],
                node["weight"],
                _amounts(node["guarantee"]),
                _amounts(node["cap"]),
                "yes" if node["acceptSurplus"] else "no",
                ",".join(node["tenants"]),
                node["pending"],
                node["running"],
            ]
        )
        rows.extend(_flatten(node["children"], depth + 1))
    return rows


def cmd_queues(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        if args.action == "apply":
            if not args.file:
                raise ValueError("usage: fedq queues apply FILE")
            result = client.apply_queues(load_yaml_file(args.file) or {})
            emit(result, output_of(args), columns=["applied queue"], rows=[[q] for q in result["applied"]])
            return 0
        tree = client.queues()
    emit(
        tree,
        output_of(args),
        columns=["QUEUE", "WEIGHT", "GUARANTEE", "CAP", "SURPLUS", "TENANTS", "PENDING", "RUNNING"],
        rows=_flatten(tree["queues"]),
    )
    return 0


def cmd_token_create(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        if args.tenant:
            token = client.create_tenant_token(args.tenant, args.ttl)
            subject = {"tenant": args.tenant}
        else:
            token = client.create_join_token(args.cluster, args.ttl)
            subject = {"cluster": args.cluster}
    emit(
        {**subject, "token": token},
        output_of(args),
        columns=["FOR", "TOKEN"],
        rows=[[next(iter(subject.values())), token]],
    )
    return 0


def _amounts(resources: dict[str, float]) -> str:
    """A table cell: empty for none, where the API's text would say 'nothing'."""
    return format_resources(resources) if resources else ""


def cmd_clusters(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        if args.action in ("cordon", "uncordon"):
            if not args.name:
                raise ValueError(f"usage: fedq clusters {args.action} NAME")
            result = client.request("POST", f"/v1/clusters/{args.name}/{args.action}")
            emit(result, output_of(args), columns=["CLUSTER", "CORDONED"], rows=[[result["name"], result["cordoned"]]])
            return 0
        listing = client.request("GET", "/v1/clusters")
    rows = [
        [
            c["name"],
            c["state"],
            c["backend"],
            c["nodes"],
            _amounts(c["capacity"]),
            _amounts(c["free"]),
            c["running"],
            "" if c["last_report_age"] is None else f"{format_span(c['last_report_age'])} ago",
            format_labels(c["labels"]) if c["labels"] else "",
        ]
        for c in listing["items"]
    ]
    emit(
        listing,
        output_of(args),
        columns=["CLUSTER", "STATE", "BACKEND", "NODES", "CAPACITY", "FREE", "RUNNING", "LAST REPORT", "LABELS"],
        rows=rows,
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    queues = sub.add_parser("queues", parents=[common], help="show the queue tree, or apply one from a file")
    queues.add_argument("action", nargs="?", choices=["show", "apply"], default="show")
    queues.add_argument("file", nargs="?")
    queues.set_defaults(func=cmd_queues)

    clusters = sub.add_parser("clusters", parents=[common], help="list member clusters; cordon or uncordon one")
    clusters.add_argument("action", nargs="?", choices=["list", "cordon", "uncordon"], default="list")
    clusters.add_argument("name", nargs="?")
    clusters.set_defaults(func=cmd_clusters)

    token = sub.add_parser("token", parents=[common], help="create tenant tokens and cluster join tokens")
    token_sub = token.add_subparsers(dest="token_action", required=True)
    create = token_sub.add_parser("create", parents=[common], help="create a token (admin)")
    who = create.add_mutually_exclusive_group(required=True)
    who.add_argument("--tenant", help="a tenant API token")
    who.add_argument("--cluster", help="a one-time join token for a member cluster")
    create.add_argument("--ttl", help="expire after e.g. 30d")
    create.set_defaults(func=cmd_token_create)
