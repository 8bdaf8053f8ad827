"""``fedq whoami``: whom the token names (its kind, name and id), to check a token before using it."""

from __future__ import annotations

import argparse

from federation.cli.context import client_from, output_of
from federation.cli.output import emit


def cmd_whoami(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        identity = client.whoami()
    rows = [[identity["role"], identity["name"], identity["token_id"]]]
    emit(identity, output_of(args), columns=["KIND", "NAME", "TOKEN ID"], rows=rows)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    parser = sub.add_parser(
        "whoami",
        parents=[common],
        help="whom the token names: admin, tenant, ...",
        epilog="e.g. fedq whoami --token fedq_...",
    )
    parser.set_defaults(func=cmd_whoami)
