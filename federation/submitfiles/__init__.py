"""What ``fedq submit FILE`` reads besides fedq's own YAML: a Slurm batch script (``#SBATCH`` directives,
``slurm``) or an HTCondor submit description (``condor``), each mapped to one fedq job manifest.

Each parser maps what has a fedq meaning and refuses the rest with the line it is on and what to do
instead (``Refused``), so a job never runs with less than its file asked for. The job spec's own
checks (queue, name, resources) stay the server's, as for a YAML file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SLURM_SUFFIXES = (".sh", ".sbatch", ".slurm", ".bash")
CONDOR_SUFFIXES = (".sub", ".submit", ".condor", ".jdl")
_CONDOR_QUEUE = re.compile(r"^\s*queue\b", re.IGNORECASE | re.MULTILINE)
_CONDOR_COMMAND = re.compile(r"^\s*\+?[A-Za-z_][A-Za-z0-9_.]*\s*=", re.MULTILINE)
_NAME = re.compile(r"[^a-z0-9-]+")


class Refused(ValueError):
    """A line of a submit file that cannot be mapped: ``path:line: what, and what to do``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


@dataclass
class Submission:
    """One job manifest (the dict a YAML file would hold), whether to submit it held, and notes for
    the user about what was read but has another home in fedq (an ``--output`` file: ``fedq logs``)."""

    manifest: dict[str, Any]
    hold: bool = False
    notes: list[str] = field(default_factory=list)


def kind_of(path: str, text: str) -> str:
    """``slurm``, ``condor`` or ``yaml``: by the file's extension, else by its content (a ``#!`` line
    with ``#SBATCH`` directives; ``key = value`` lines with a ``queue`` statement)."""
    lowered = path.lower()
    if lowered.endswith(SLURM_SUFFIXES):
        return "slurm"
    if lowered.endswith(CONDOR_SUFFIXES):
        return "condor"
    if lowered.endswith((".yaml", ".yml", ".json")):
        return "yaml"
    if text.startswith("#!") and "#SBATCH" in text:
        return "slurm"
    if _CONDOR_QUEUE.search(text) and _CONDOR_COMMAND.search(text):
        return "condor"
    return "yaml"


def job_name(path: str) -> str:
    """A job name from a file name, as sbatch names a job after its script: ``Train_2.sh`` -> ``train-2``."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
    return _NAME.sub("-", stem).strip("-")[:63].strip("-") or "job"


def read(path: str, text: str, kind: str) -> Submission:
    """The submission a Slurm script or an HTCondor submit description describes."""
    if kind == "slurm":
        from federation.submitfiles import slurm

        return slurm.parse(path, text)
    from federation.submitfiles import condor

    return condor.parse(path, text)


_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)B?$", re.IGNORECASE)
_MIB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}


def mebibytes(text: str) -> float | None:
    """A memory size as Slurm's ``--mem`` and HTCondor's ``request_memory`` write it, in MiB: a number
    of MiB, or with a suffix K, M, G or T (KB, MB... too: HTCondor's), each 1024 times the one before
    (Slurm's "megabytes" are MiB). None: not such a size."""
    match = _MEMORY.match(text.strip())
    if match is None:
        return None
    return float(match.group(1)) * _MIB[match.group(2).upper()]


def memory_quantity(mib: float) -> str:
    """MiB as the Kubernetes quantity a job spec takes: ``4096Mi`` (``512Ki`` for a part of one)."""
    return f"{int(mib)}Mi" if mib == int(mib) else f"{round(mib * 1024)}Ki"
