"""The cluster credential an agent gets at join, kept on disk readable only by its owner."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Credential:
    server: str
    cluster: str
    token: str
    lease: float | None = None
    """The federation's lostAfter at join: the agent's lease on its runs until a reply renews it."""


def save_credential(path: Path, credential: Credential) -> None:
    """Write atomically with mode 0600 from the start (never world-readable, not even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(credential), handle)
    os.replace(tmp, path)


def load_credential(path: Path) -> Credential:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Credential(server=data["server"], cluster=data["cluster"], token=data["token"], lease=data.get("lease"))
    except FileNotFoundError:
        raise ValueError(f"no credential at {path}: run `fedq agent join` first") from None
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"unreadable credential file {path}: {exc}") from None
