"""Every ``fedq`` command says what it does with an example, every argument says what it takes, and
``fedq COMMAND --help`` fits one screen (issue 24)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from contextlib import redirect_stdout

import pytest

from federation.cli import build_parser
from federation.cli.completion import script

SCREEN = 50  # lines of an ordinary terminal window


def commands(parser: argparse.ArgumentParser, path: str = "fedq") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand's parser, by its path (``fedq token create``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{path} {name}", child
                yield from commands(child, f"{path} {name}")


ALL = dict(commands(build_parser()))


def test_every_argument_of_every_command_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, parser in ALL.items()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert missing == []


def test_every_command_has_a_help_line_and_an_example() -> None:
    root = build_parser()
    listed = {
        f"fedq {choice.dest}": choice.help
        for action in root._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    }
    assert all(listed.values()), listed
    without = [
        path for path, parser in ALL.items() if "fedq " not in f"{parser.epilog or ''} {parser.description or ''}"
    ]
    assert without == []


@pytest.mark.parametrize("path", sorted(ALL))
def test_help_fits_one_screen(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*path.split()[1:], "--help"])
    lines = out.getvalue().splitlines()
    assert len(lines) <= SCREEN, f"{path} --help is {len(lines)} lines"
    assert max(map(len, lines)) <= 100


def test_simulate_offers_server_options_only_for_its_export() -> None:
    """A replay runs locally; only ``--export-history`` asks a server (issue 37), and says so."""
    simulate = ALL["fedq simulate"]
    offered = {flag for action in simulate._actions for flag in action.option_strings}
    assert {"--server", "--token", "--ca", "--export-history", "--output"} <= offered
    assert "--since" in simulate.format_help()


def test_completion_offers_each_command_its_options_and_choices() -> None:
    bash = script(build_parser(), "bash")
    assert "['fedq jobs']='" in bash and "--state" in bash.split("['fedq jobs']='")[1].split("'")[0]
    assert "['fedq token create']=" in bash
    assert "['fedq jobs --output']='table wide json yaml'" in bash
    assert script(build_parser(), "zsh").startswith("# fedq completion for zsh")


def test_each_module_registers_the_commands_its_entry_names() -> None:
    """``COMMANDS`` is what lets ``fedq jobs`` import one command module: its names must be the ones each
    module registers, or a command would be missing from its own parser."""
    from federation.cli import COMMANDS, build_parser

    def commands(parser: argparse.ArgumentParser) -> set[str]:
        return set(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)

    every = {name for _, names, _ in COMMANDS for name in names}
    assert commands(build_parser()) == every
    for _, names, _ in COMMANDS:
        for name in names:
            assert commands(build_parser(name)) == (every if name == "completion" else set(names))
