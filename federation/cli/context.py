"""Options every client command shares: where the server is, who we are, how to print."""

from __future__ import annotations

import argparse
import os

from federation.client import FedqClient

DEFAULT_SERVER = "http://127.0.0.1:8080"


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--server", default=argparse.SUPPRESS, help="API URL (env FEDQ_SERVER)")
    common.add_argument("--token", default=argparse.SUPPRESS, help="bearer token (env FEDQ_TOKEN)")
    common.add_argument(
        "--output", "-o", choices=["table", "json", "yaml"], default=argparse.SUPPRESS, help="output format"
    )
    return common


def client_from(args: argparse.Namespace) -> FedqClient:
    server = getattr(args, "server", None) or os.environ.get("FEDQ_SERVER") or DEFAULT_SERVER
    token = getattr(args, "token", None) or os.environ.get("FEDQ_TOKEN")
    return FedqClient(server, token)


def output_of(args: argparse.Namespace) -> str:
    return getattr(args, "output", None) or "table"
