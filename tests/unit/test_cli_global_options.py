"""The options every client command shares work before the command as after it (issue 36: ``fedq --token
T jobs`` was ``invalid choice: 'T'``): moved after it, so the command's own parser checks them."""

from __future__ import annotations

import pytest

from federation.cli import build_parser
from federation.cli.context import common_options, hoist_global_options


@pytest.mark.parametrize(
    ("argv", "moved"),
    [
        (["--token", "T", "jobs"], ["jobs", "--token", "T"]),
        (["--server=https://a", "-ojson", "report", "quota"], ["report", "quota", "--server=https://a", "-ojson"]),
        (
            ["-o", "json", "--token", "T", "logs", "ID", "--", "-x"],
            ["logs", "ID", "-o", "json", "--token", "T", "--", "-x"],
        ),
        (["--token", "A", "jobs", "--token", "B"], ["jobs", "--token", "B"]),  # the later one wins
        (["--version"], ["--version"]),
        (["jobs", "--token", "T"], ["jobs", "--token", "T"]),
    ],
)
def test_options_before_the_command_go_after_it(argv: list[str], moved: list[str]) -> None:
    assert hoist_global_options(argv, common_options()) == moved


def test_the_command_checks_what_was_written_before_it(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(
        hoist_global_options(["--token", "T", "-o", "csv", "report", "quota"], common_options())
    )
    assert (args.token, args.output) == ("T", "csv")  # report offers csv
    with pytest.raises(SystemExit):
        build_parser().parse_args(hoist_global_options(["-o", "csv", "jobs"], common_options()))
    assert "invalid choice: 'csv'" in capsys.readouterr().err
