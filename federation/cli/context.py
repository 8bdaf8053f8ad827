"""Options every client command shares: where the server is, who we are, how to print.

The HTTP client is imported when a command connects, not when the parser is built: ``--help`` and a
usage error never pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from federation.client import FedqClient

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


def client_from(args: argparse.Namespace) -> FedqClient:
    # httpx imports its own command line (click, rich.progress, pygments) when they are installed:
    # ~60 ms fedq never uses. Marked missing before httpx loads, httpx skips it (its fallback).
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from federation.client import FedqClient

    server = getattr(args, "server", None) or os.environ.get("FEDQ_SERVER") or DEFAULT_SERVER
    token = getattr(args, "token", None) or os.environ.get("FEDQ_TOKEN")
    return FedqClient(server, token, ca=ca_from(args), cert=cert_from(args))


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
