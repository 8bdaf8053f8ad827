"""Options every client command shares: where the server is, who we are, how to print.

The HTTP client is imported when a command connects, not when the parser is built: ``--help`` and a
usage error never pay for it; a command that reads once takes the standard library's (``reader_from``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from federation.client import FedqClient
    from federation.quick_client import QuickClient

DEFAULT_SERVER = "http://127.0.0.1:8080"
OUTPUTS = ("table", "wide", "json", "yaml")


def server_options() -> argparse.ArgumentParser:
    """Where the server is and who we are: every command that talks to the API."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--server", default=argparse.SUPPRESS, help="API URL (env FEDQ_SERVER), e.g. https://fedq.example:8080"
    )
    common.add_argument("--token", default=argparse.SUPPRESS, help="bearer token (env FEDQ_TOKEN)")
    common.add_argument(
        "--ca", default=argparse.SUPPRESS, help="CA file that signed an https server's certificate (env FEDQ_CA)"
    )
    common.add_argument(
        "--cert", default=argparse.SUPPRESS, help="client certificate, for a server that requires one (env FEDQ_CERT)"
    )
    common.add_argument("--key", default=argparse.SUPPRESS, help="the client certificate's key (env FEDQ_KEY)")
    return common


def output_options(choices: Sequence[str] = OUTPUTS) -> argparse.ArgumentParser:
    """``-o``: a table fitted to the terminal, a wider one, or the data as JSON or YAML."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--output",
        "-o",
        choices=list(choices),
        default=argparse.SUPPRESS,
        help=f"{', '.join(choices)} (a table fits the terminal, wide shows every column); e.g. -o wide",
    )
    return parent


def common_options() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False, parents=[server_options(), output_options()])


def hoist_global_options(argv: Sequence[str], common: argparse.ArgumentParser) -> list[str]:
    """``argv`` with the common options written before the command moved after it, so ``fedq --token T
    jobs`` means ``fedq jobs --token T``: the command's own parser then checks them (an ``-o`` it does not
    offer, an option it does not take) as if they had been written there. One also written after the
    command is dropped from before it: the later one wins, as within a command."""

    def option(word: str) -> argparse.Action | None:
        """The common option ``word`` starts (``--token``, ``--token=T``, ``-o``, ``-ojson``), if any."""
        if not word.startswith("-") or word == "--":
            return None
        return common._option_string_actions.get(word.split("=", 1)[0] if word.startswith("--") else word[:2])

    moved: list[tuple[argparse.Action, list[str]]] = []
    rest = list(argv)
    at = 0
    while at < len(rest) and rest[at].startswith("-") and rest[at] != "--":
        action = option(rest[at])
        if action is None:
            at += 1  # a top-level option of its own (--help, --version)
            continue
        joined = "=" in rest[at] or (not rest[at].startswith("--") and len(rest[at]) > 2)
        count = 1 if joined else 2  # every common option takes a value
        moved.append((action, rest[at : at + count]))
        del rest[at : at + count]
    end = rest.index("--") if "--" in rest else len(rest)
    given_after = {option(word) for word in rest[at:end]}
    words = [word for action, spelled in moved if action not in given_after for word in spelled]
    return rest[:end] + words + rest[end:]


def client_from(args: argparse.Namespace) -> FedqClient:
    """The client of a command that streams or writes (httpx: pooled, streams)."""
    # httpx imports its own command line (click, rich.progress, pygments) when they are installed:
    # ~60 ms fedq never uses. Marked missing before httpx loads, httpx skips it (its fallback).
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from federation.client import FedqClient

    return FedqClient(*_where(args), ca=ca_from(args), cert=cert_from(args))


def reader_from(args: argparse.Namespace) -> QuickClient:
    """The client of a command that reads once and prints (``fedq jobs``, ``job``, ``explain``): the
    standard library's, whose import costs a few milliseconds where httpx's costs ~60."""
    from federation.quick_client import QuickClient

    return QuickClient(*_where(args), ca=ca_from(args), cert=cert_from(args))


def _where(args: argparse.Namespace) -> tuple[str, str | None]:
    """``--server`` and ``--token``, or FEDQ_SERVER and FEDQ_TOKEN."""
    server = getattr(args, "server", None) or os.environ.get("FEDQ_SERVER") or DEFAULT_SERVER
    return server, getattr(args, "token", None) or os.environ.get("FEDQ_TOKEN")


def ca_from(args: argparse.Namespace) -> str | None:
    """``--ca`` or FEDQ_CA: the CA to trust for an https server (none: the system's)."""
    return getattr(args, "ca", None) or os.environ.get("FEDQ_CA") or None


def cert_from(args: argparse.Namespace) -> tuple[str, str] | None:
    """``--cert``/``--key`` or FEDQ_CERT/FEDQ_KEY: a client certificate for a server that requires one."""
    cert = getattr(args, "cert", None) or os.environ.get("FEDQ_CERT")
    key = getattr(args, "key", None) or os.environ.get("FEDQ_KEY")
    if bool(cert) != bool(key):
        raise ValueError("--cert and --key (FEDQ_CERT and FEDQ_KEY) go together: a certificate and its key")
    return (cert, key) if cert and key else None


def output_of(args: argparse.Namespace) -> str:
    return getattr(args, "output", None) or "table"
