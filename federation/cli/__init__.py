"""The ``fedq`` command. Exit codes: 0 ok, 1 refused by the server or bad input, 2 usage,
3 server unreachable or failing, 4 a job waited on (``submit --wait``, ``job --follow``) did not succeed.

Building the parser for one command imports only the module that registers it (``COMMANDS``; all of
them for ``fedq --help`` and completion), and a command module's heavy imports (the HTTP client, rich,
pydantic models, the server, the simulator, the agent) wait until its command runs: ``fedq jobs
--help`` and ``fedq jobs`` start in a fraction of a second (``bench/cli.py``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from typing import Any

from federation.cli.context import common_options, hoist_global_options
from federation.cli.output import fail

EXIT_REFUSED = 1
EXIT_UNAVAILABLE = 3


class _Version(argparse.Action):
    """``--version``: the installed package's, read only when asked (importlib.metadata is slow to load)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version

        parser.exit(message=f"fedq {version('fedq')}\n")


COMMANDS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("federation.cli.server", ("server",), ""),
    ("federation.cli.submit", ("submit",), "common"),
    ("federation.cli.jobs", ("jobs", "job", "explain"), "common"),
    ("federation.cli.logs", ("logs",), "common"),
    ("federation.cli.actions", ("cancel", "hold", "release", "requeue", "update"), "common"),
    ("federation.cli.admin", ("queues", "clusters", "token"), "common"),
    ("federation.cli.report", ("report",), "common"),
    ("federation.cli.simulate", ("simulate",), ""),
    ("federation.cli.whatif", ("whatif",), "common"),
    ("federation.cli.whoami", ("whoami",), "common"),
    ("member_agent.cli", ("agent",), ""),
    ("federation.cli.up", ("up",), ""),
    ("federation.cli.completion", ("completion",), "parser"),
)
"""Each command module, the commands it registers (``tests/unit/test_cli_help.py`` checks them) and what
its ``register`` takes besides the subparsers: the common options, or the whole parser."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``command`` alone when it is one of ``COMMANDS``, else of every command."""
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="fedq",
        description="Federated batch queue manager: one queue over many clusters.",
        epilog="e.g. fedq up; fedq submit job.yaml --wait; fedq jobs; fedq explain ID. `fedq COMMAND --help` for more.",
    )
    parser.add_argument("--version", action=_Version, help="print fedq's version and exit")
    shown = parser.add_argument_group("options of every client command, before or after it (fedq --token T jobs)")
    for action in common._actions:  # documented here; ``hoist_global_options`` hands them to the command
        shown._add_action(action)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = [entry for entry in COMMANDS if command in entry[1] and command != "completion"]
    for module, _, needs in named or COMMANDS:  # completion is made from every command's parser
        register = importlib.import_module(module).register
        if needs == "common":
            register(sub, common)
        elif needs == "parser":
            register(sub, parser)
        else:
            register(sub)
    return parser


def _exit_code(exc: Exception) -> int | None:
    """The exit code for an error a command may raise; None: a bug, shown with its traceback."""
    if isinstance(exc, ValueError | OSError):  # bad input, or a file that cannot be read or written
        return EXIT_REFUSED
    client = sys.modules.get("federation.client_base")  # a FedqError means a client was loaded
    if client is not None and isinstance(exc, client.FedqError):
        return EXIT_UNAVAILABLE if exc.status == 0 or exc.status >= 500 else EXIT_REFUSED
    return None


def main(argv: list[str] | None = None) -> int:
    words = hoist_global_options(sys.argv[1:] if argv is None else argv, common_options())
    args = build_parser(words[0] if words else None).parse_args(words)
    args.clock = time.time  # what prints as it goes (--follow, --watch) reads it per line or redraw
    args.now = args.clock()  # the one clock read of a command that prints once: its times are relative to it
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        exit_code = _exit_code(exc)
        if exit_code is None:
            raise
        return fail(str(exc), exit_code)


if __name__ == "__main__":
    sys.exit(main())
