"""``fedq token create --cluster NAME --allow-labels ... --max-capacity ...``: the flags are checked
before anything is sent (a server that is not there is never reached)."""

from __future__ import annotations

import pytest

from federation.cli import main
from federation.launcher import free_port


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tenant", "alice", "--max-capacity", "cpu=4"], "bound a join token: use them with --cluster"),
        (["--cluster", "east", "--allow-labels", "region"], "--allow-labels takes key=value pairs"),
        (["--cluster", "east", "--max-capacity", "=4"], "--max-capacity takes key=value pairs"),
    ],
)
def test_grant_flags_are_checked_before_the_request(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    assert main(["token", "create", *flags, "--server", server, "--token", "fedq_admin_x"]) == 1
    assert message in capsys.readouterr().err
