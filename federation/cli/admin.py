"""``fedq queues [apply FILE]``, ``fedq clusters [cordon|uncordon NAME]`` and ``fedq token create|list|revoke``."""

from __future__ import annotations

import argparse
from typing import Any

from federation.cli.context import client_from, output_of
from federation.cli.output import Column, emit
from policies.format import format_labels, format_resources, format_span, format_when


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
            from federation.config import load_yaml_file

            if not args.file:
                raise ValueError("usage: fedq queues apply FILE")
            result = client.apply_queues(load_yaml_file(args.file) or {})
            emit(result, output_of(args), columns=["applied queue"], rows=[[q] for q in result["applied"]])
            return 0
        tree = client.queues()
    emit(
        tree,
        output_of(args),
        columns=[
            "QUEUE",
            Column("WEIGHT", drop=2),
            Column("GUARANTEE", drop=4, fold=True),
            Column("CAP", drop=3, fold=True),
            Column("SURPLUS", wide=True),
            Column("TENANTS", drop=1, fold=True),
            "PENDING",
            "RUNNING",
        ],
        rows=_flatten(tree["queues"]),
    )
    return 0


_KINDS = ("tenant", "cluster", "admin", "metrics")


def _pairs(text: str | None, flag: str) -> dict[str, str] | None:
    """``k=v,k2=v2`` as a dict (None when the flag was not given)."""
    if text is None:
        return None
    pairs = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} takes key=value pairs separated by commas, not {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def cmd_token_create(args: argparse.Namespace) -> int:
    kind = next(kind for kind in _KINDS if getattr(args, kind))
    labels, capacity = _pairs(args.allow_labels, "--allow-labels"), _pairs(args.max_capacity, "--max-capacity")
    grant = {"labels": labels} if labels is not None else {}
    if capacity is not None:
        grant["capacity"] = capacity
    if kind != "cluster" and grant:
        raise ValueError("--allow-labels and --max-capacity bound a join token: use them with --cluster")
    with client_from(args) as client:
        made = client.new_token(kind, getattr(args, kind), args.ttl, grant)
    emit(
        made,
        output_of(args),
        columns=["KIND", "FOR", "ID", "EXPIRES", "TOKEN"],
        rows=[
            [
                made["kind"],
                made["name"],
                made["id"],
                format_when(made["expires_at"], args.now, local=True),
                made["token"],
            ]
        ],
    )
    return 0


def _token_rows(items: list[dict[str, Any]], now: float) -> list[list[Any]]:
    def when(timestamp: float | None) -> str:
        return "" if timestamp is None else format_when(timestamp, now, local=True)

    return [
        [
            t["id"],
            t["kind"],
            t["name"],
            t["state"] if t["revoked_because"] is None else f"{t['state']} ({t['revoked_because']})",
            when(t["created_at"]),
            when(t["revoked_at"] or t["expires_at"]) or "never",
        ]
        for t in items
    ]


_TOKEN_COLUMNS: list[str | Column] = [
    "ID",
    "KIND",
    "FOR",
    Column("STATE", fold=True),
    Column("CREATED", drop=1),
    "ENDS",
]


def cmd_token_list(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        items = client.tokens(kind=args.kind, name=args.name)
    emit({"items": items}, output_of(args), columns=_TOKEN_COLUMNS, rows=_token_rows(items, args.now))
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        revoked = client.revoke_token(args.id)
    emit(revoked, output_of(args), columns=_TOKEN_COLUMNS, rows=_token_rows([revoked], args.now))
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
        columns=[
            "CLUSTER",
            "STATE",
            Column("BACKEND", drop=2),
            Column("NODES", drop=3),
            Column("CAPACITY", drop=4, fold=True),
            Column("FREE", fold=True),
            "RUNNING",
            Column("LAST REPORT", drop=1),
            Column("LABELS", wide=True),
        ],
        rows=rows,
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    queues = sub.add_parser(
        "queues",
        parents=[common],
        help="show the queue tree, or apply one from a file",
        formatter_class=raw,
        epilog="e.g. fedq queues\n     fedq queues apply configs/queues.yaml   # admin",
    )
    queues.add_argument("action", nargs="?", choices=["show", "apply"], default="show", help="show (default) or apply")
    queues.add_argument("file", nargs="?", help="apply: the queue tree YAML, e.g. configs/queues.yaml")
    queues.set_defaults(func=cmd_queues)

    clusters = sub.add_parser(
        "clusters",
        parents=[common],
        help="list member clusters; cordon or uncordon one",
        formatter_class=raw,
        epilog="e.g. fedq clusters -o wide\n     fedq clusters cordon ray-local   # admin: no new jobs there",
    )
    clusters.add_argument(
        "action", nargs="?", choices=["list", "cordon", "uncordon"], default="list", help="list (default), or an action"
    )
    clusters.add_argument("name", nargs="?", help="cordon/uncordon: the cluster, e.g. ray-local")
    clusters.set_defaults(func=cmd_clusters)

    token = sub.add_parser(
        "token",
        parents=[common],
        help="create, list and revoke tokens (admin)",
        formatter_class=raw,
        epilog="e.g. fedq token create --tenant alice --ttl 30d\n     fedq token list --kind tenant",
    )
    token_sub = token.add_subparsers(dest="token_action", required=True, metavar="ACTION")
    create = token_sub.add_parser(
        "create",
        parents=[common],
        help="create a token; it is shown this once",
        formatter_class=raw,
        epilog="e.g. fedq token create --tenant alice\n"
        "     fedq token create --cluster gpu-eu --allow-labels region=eu --max-capacity cpu=64,memory=256Gi",
    )
    who = create.add_mutually_exclusive_group(required=True)
    who.add_argument("--tenant", help="a tenant API token, e.g. alice")
    who.add_argument("--cluster", help="a one-time join token for a member cluster, e.g. gpu-eu")
    who.add_argument(
        "--admin", nargs="?", const="admin", metavar="NAME", help="an admin token, named for its holder (rotation)"
    )
    who.add_argument("--metrics", metavar="NAME", help="a token that reads /metrics and nothing else, e.g. prom")
    create.add_argument("--ttl", help="expire after e.g. 7d (default: the server's auth.tokenTtl or joinTokenTtl)")
    create.add_argument(
        "--allow-labels", metavar="K=V,...", help="a join token: the only labels the cluster may join with"
    )
    create.add_argument(
        "--max-capacity", metavar="R=Q,...", help="a join token: the most its reports may claim (cpu=64,memory=256Gi)"
    )
    create.set_defaults(func=cmd_token_create)
    listing = token_sub.add_parser(
        "list",
        parents=[common],
        help="tokens with their ids and times, never the secret",
        epilog="e.g. fedq token list --kind tenant --name alice",
    )
    listing.add_argument(
        "--kind", choices=["admin", "metrics", "tenant", "cluster", "join"], help="only tokens of this kind"
    )
    listing.add_argument("--name", help="only the tokens of this tenant, cluster or holder, e.g. alice")
    listing.set_defaults(func=cmd_token_list)
    revoke = token_sub.add_parser(
        "revoke",
        parents=[common],
        help="revoke a token by its id: it stops at once",
        epilog="e.g. fedq token revoke tok_3f9a",
    )
    revoke.add_argument("id", help="the token's id, from `fedq token list` or `fedq token create`")
    revoke.set_defaults(func=cmd_token_revoke)
