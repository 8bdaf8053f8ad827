"""An HTCondor submit description as one fedq job (https://htcondor.readthedocs.io/en/latest/man-pages/
condor_submit.html): ``command = value`` lines (names in any case, ``#`` comments, ``\\`` continues a
line) up to one ``queue [N]`` statement. Mapped:

- ``executable`` and ``arguments`` -> the task's command (``arguments`` in either syntax: in double
  quotes, words split at spaces with single quotes grouping; else split at whitespace);
- ``request_cpus``, ``request_memory`` (MiB unless suffixed K, M, G or T; KB, MB... too) and
  ``request_gpus`` -> the task's resources;
- ``queue N`` -> an array of N (its elements are numbered from 0, as ``$(Process)``); ``queue`` alone: one;
- ``accounting_group`` -> ``queue`` (both are dotted hierarchies: ``research.vision``);
- ``batch_name`` -> ``metadata.name`` (default: the file's name); ``hold = true`` -> submitted held;
- ``universe = vanilla`` (what fedq runs); ``output``, ``error`` and ``log`` are noted, not refused:
  fedq keeps every task's output and events (``fedq logs``, ``fedq job``).

Anything else (another universe, file transfer, a ``$(macro)``, ``queue ... from``) is refused with
its line.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from federation.submitfiles import Refused, Submission, job_name, mebibytes, memory_quantity

_COMMAND = re.compile(r"^(\+?[A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$")
_QUEUE = re.compile(r"^queue(?:\s+(\d+))?\s*$", re.IGNORECASE)
NOTED = ("output", "error", "log")
MAPPED = (
    *("executable", "arguments", "request_cpus", "request_memory", "request_gpus", "accounting_group"),
    *("batch_name", "hold", "universe", *NOTED),
)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first line number, text)`` of each line once ``\\`` continuations are joined, comments dropped."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if pending is None and (not line or line.startswith("#")):
            continue
        start, before = pending if pending is not None else (number, "")
        if line.endswith("\\"):
            pending = (start, before + line[:-1] + " ")
            continue
        pending = None
        joined.append((start, before + line))
    if pending is not None:
        joined.append(pending)
    return joined


def arguments(text: str) -> list[str]:
    """The words of ``arguments``: the new syntax (double-quoted; spaces split, single quotes group,
    ``""`` is a double quote and ``''`` inside single quotes a single one) or the old (whitespace splits)."""
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        inner = text[1:-1].replace('""', '"')
        lexer = shlex.shlex(inner.replace("''", "\0"), posix=True)
        lexer.whitespace_split, lexer.quotes, lexer.escape = True, "'", ""
        return [word.replace("\0", "'") for word in lexer]
    return text.split()


def parse(path: str, text: str) -> Submission:
    """The job a submit description describes; ``Refused`` names the first line that cannot be mapped."""
    values: dict[str, tuple[str, int]] = {}
    count: int | None = None
    notes = []
    for number, line in _logical_lines(text):
        queued = _QUEUE.match(line)
        if queued is not None:
            if count is not None:
                raise Refused(path, number, "a second queue statement cannot be mapped: submit one job per file")
            count = int(queued.group(1) or 1)
            if count < 1:
                raise Refused(path, number, "queue 0 queues nothing: write `queue` or `queue N`")
            continue
        if line.lower().startswith("queue"):
            raise Refused(path, number, f"{line!r} cannot be mapped: fedq takes `queue` or `queue N` (an array of N)")
        if count is not None:
            raise Refused(path, number, "commands after the queue statement cannot be mapped: put them before it")
        command = _COMMAND.match(line)
        if command is None:
            raise Refused(path, number, f"{line!r} is not `command = value` or a queue statement")
        name, value = command.group(1).lower(), command.group(2).strip()
        if name not in MAPPED:
            raise Refused(
                path, number, f"{command.group(1)} cannot be mapped: fedq has no such setting; remove the line"
            )
        if name in NOTED:
            notes.append(f"{path}:{number}: {name} is kept by fedq, not written to {value}: see `fedq logs ID`")
            continue
        if "$(" in value:
            raise Refused(path, number, f"{command.group(1)}: macros ($(...)) cannot be mapped: write the value")
        values[name] = (value, number)
    if count is None:
        raise Refused(path, len(text.splitlines()) or 1, "no queue statement: end the file with `queue` or `queue N`")
    return _submission(path, values, count, notes)


def _submission(path: str, values: dict[str, tuple[str, int]], count: int, notes: list[str]) -> Submission:
    def get(name: str) -> str | None:
        return values[name][0] if name in values else None

    def checked(name: str, check: Any) -> Any:
        """``check(value)``, its ValueError refused at the command's line."""
        try:
            return check(values[name][0])
        except ValueError as exc:
            raise Refused(path, values[name][1], f"{name} = {values[name][0]}: {exc}") from None

    if get("universe") is not None:
        checked("universe", _vanilla)
    executable = get("executable")
    if not executable:
        raise Refused(path, 1, "no executable: add `executable = /path/to/program`")
    resources: dict[str, Any] = {}
    if get("request_cpus") is not None:
        resources["cpu"] = checked("request_cpus", _number)
    if get("request_memory") is not None:
        resources["memory"] = memory_quantity(checked("request_memory", _memory))
    if get("request_gpus") is not None:
        from federation.models.resources import GPU

        resources[GPU] = checked("request_gpus", _number)
    task = {"name": "main", "resources": resources, "command": [executable, *arguments(get("arguments") or "")]}
    spec: dict[str, Any] = {"tasks": [task]}
    if get("accounting_group"):
        spec["queue"] = get("accounting_group")
    if count > 1:
        spec["array"] = {"count": count}
    hold = checked("hold", _boolean) if "hold" in values else False
    manifest = {
        "apiVersion": "fedq/v1",
        "kind": "Job",
        "metadata": {"name": get("batch_name") or job_name(path)},
        "spec": spec,
    }
    return Submission(manifest, hold=hold, notes=notes)


def _vanilla(value: str) -> None:
    if value.lower() != "vanilla":
        raise ValueError("cannot be mapped: fedq runs what the vanilla universe runs")


def _number(value: str) -> float:
    try:
        amount = float(value)
    except ValueError:
        raise ValueError("cannot be mapped: fedq takes a number here, not an expression") from None
    if amount <= 0:
        raise ValueError("must be more than 0")
    return amount


def _memory(value: str) -> float:
    mib = mebibytes(value)
    if mib is None or mib <= 0:
        raise ValueError("cannot be mapped: MiB, or a number with K, M, G or T (e.g. 2G)")
    return mib


def _boolean(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValueError("true or false")
    return value.lower() == "true"
