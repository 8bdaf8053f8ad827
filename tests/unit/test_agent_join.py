"""``fedq agent join`` checks its backend before it spends the one-time join token."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.cli import main
from federation.launcher import free_port


def test_bad_backend_settings_fail_before_the_join(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listens at the server address: a join attempted first would fail as unreachable (exit 3).
    The bad setting is reported instead (exit 1), so the token was never sent."""
    config = tmp_path / "agent.yaml"
    config.write_text("name: c1\nbackend: simulated\nsimulated: {nodez: []}\n", encoding="utf-8")
    code = main(
        ["agent", "join", "--server", f"http://127.0.0.1:{free_port()}", "--token", "fedq_join_x"]
        + ["--config", str(config), "--credential-file", str(tmp_path / "c1.json")]
    )
    assert code == 1
    assert "unknown simulated backend keys ['nodez']" in capsys.readouterr().err
    assert not (tmp_path / "c1.json").exists()
