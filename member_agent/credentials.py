"""The cluster credential an agent gets at join, and where it is kept: a file readable only by its
owner, or (an agent in a pod) a Kubernetes Secret, so a rescheduled pod reports again without a new
join token (``member_agent.k8s_credentials``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Credential:
    server: str
    cluster: str
    token: str
    lease: float | None = None
    """The federation's lostAfter at join: the agent's lease on its runs until a reply renews it."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str, where: str) -> Credential:
        """Parsed from what ``to_json`` wrote; ``where`` names the place in the error."""
        try:
            data = json.loads(text)
            return cls(server=data["server"], cluster=data["cluster"], token=data["token"], lease=data.get("lease"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"unreadable credential in {where}: {exc}") from None


class CredentialStore(Protocol):
    """Where ``fedq agent join`` keeps the credential (a re-join replaces it) and ``fedq agent run`` reads it."""

    @property
    def where(self) -> str:
        """The place, for messages."""
        ...

    def save(self, credential: Credential) -> None: ...

    def load(self) -> Credential:
        """The stored credential; ValueError (saying to join) when there is none."""
        ...


@dataclass(frozen=True)
class FileCredentials:
    path: Path

    @property
    def where(self) -> str:
        return str(self.path)

    def save(self, credential: Credential) -> None:
        save_credential(self.path, credential)

    def load(self) -> Credential:
        return load_credential(self.path)


def save_credential(path: Path, credential: Credential) -> None:
    """Write atomically with mode 0600 from the start (never world-readable, not even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(credential.to_json())
    os.replace(tmp, path)


def load_credential(path: Path) -> Credential:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"no credential at {path}: run `fedq agent join` first") from None
    except OSError as exc:
        raise ValueError(f"unreadable credential file {path}: {exc}") from None
    return Credential.from_json(text, f"file {path}")
