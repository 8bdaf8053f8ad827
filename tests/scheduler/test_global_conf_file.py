"""configs/scheduler-global.yaml is what the server builds, not a second copy that can drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.cli import main
from federation.config import load_federation_config
from federation.scheduler.conf import global_conf, render_global_conf
from policies import load_conf

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_the_shipped_global_conf_file_is_the_servers_own() -> None:
    config = load_federation_config(CONFIGS / "federation.yaml")
    assert (CONFIGS / "scheduler-global.yaml").read_text() == render_global_conf(config)
    assert load_conf(CONFIGS / "scheduler-global.yaml") == global_conf(config)


def test_only_fair_share_limits_allocation_between_queues() -> None:
    """proportion's weight-only deserved share (no decay) must not hold a newcomer at its weight."""
    conf = global_conf(load_federation_config(CONFIGS / "federation.yaml"))
    names = {p.name for tier in conf.tiers for p in tier}
    assert "fairshare" in names and "proportion" not in names and "drf" not in names
    assert "enqueue" not in conf.actions


def test_print_conf_prints_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["server", "--config", str(CONFIGS / "federation.yaml"), "--print-conf"]) == 0
    out = capsys.readouterr().out
    assert out == (CONFIGS / "scheduler-global.yaml").read_text()
