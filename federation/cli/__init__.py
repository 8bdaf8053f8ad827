"""The ``fedq`` command. Exit codes: 0 ok, 1 refused by the server or bad input, 2 usage,
3 server unreachable or failing, 4 a job waited on (``submit --wait``, ``job --follow``) did not succeed."""

from __future__ import annotations

import argparse
import sys
import time

from federation import up
from federation.cli import actions, admin, jobs, logs, report, server, simulate
from federation.cli.context import common_options
from federation.cli.output import fail
from federation.client import FedqError
from federation.logs import configure_logging
from member_agent import cli as agent_cli

EXIT_REFUSED = 1
EXIT_UNAVAILABLE = 3


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(prog="fedq", description="Federated batch queue manager", parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    server.register(sub)
    jobs.register(sub, common)
    logs.register(sub, common)
    actions.register(sub, common)
    admin.register(sub, common)
    report.register(sub, common)
    simulate.register(sub, common)
    agent_cli.register(sub)
    up.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.now = time.time()  # the one clock read: commands show times relative to it
    configure_logging()
    try:
        code: int = args.func(args)
        return code
    except FedqError as exc:
        return fail(str(exc), EXIT_UNAVAILABLE if exc.status == 0 or exc.status >= 500 else EXIT_REFUSED)
    except ValueError as exc:
        return fail(str(exc), EXIT_REFUSED)
    except OSError as exc:  # a file that cannot be read or written: the server's errors arrive as FedqError
        return fail(str(exc), EXIT_REFUSED)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
