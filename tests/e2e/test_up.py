"""The README's first command: ``fedq up`` brings everything up, completes the sample workload and
prints the report, within 2 minutes (issue 4 acceptance 4)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from federation.launcher import free_port
from tests.e2e.support import REPO

pytestmark = [pytest.mark.etcd, pytest.mark.ray, pytest.mark.slow]


def test_fedq_up_runs_the_sample_workload_and_reports(tmp_path: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "federation.cli",
            "up",
            "--exit",
            "--port",
            str(free_port()),
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=180,
    )
    elapsed = time.monotonic() - started
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in tmp_path.glob("*.log"))
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{logs}"
    out = result.stdout
    assert "per-tenant report" in out
    for tenant in ("alice", "bob", "carol", "dave"):
        assert tenant in out
    assert "Failed" not in out.split("per-tenant report")[0]
    assert out.count("Succeeded") >= 11  # 11 jobs in configs/examples/workload.yaml (the array has 8)
    assert "fedq is up: export FEDQ_SERVER=" in out
    assert elapsed < 120, f"fedq up took {elapsed:.0f}s"
