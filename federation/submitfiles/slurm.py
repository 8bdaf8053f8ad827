"""A Slurm batch script as one fedq job: its ``#SBATCH`` directives mapped to the spec, its body the
task's command, run by the interpreter of its ``#!`` line.

As sbatch (https://slurm.schedmd.com/sbatch.html), directives are read from the ``#SBATCH`` lines before
the first command of the script; later ones are comments. Mapped:

- ``-n/--ntasks`` -> the task's replicas; ``-c/--cpus-per-task`` -> each task's ``cpu`` (default 1);
- ``--mem`` (per node: only for one task) or ``--mem-per-cpu`` -> each task's ``memory``; sizes in MiB
  unless suffixed K, M, G or T (binary, as Slurm's);
- ``-t/--time`` -> ``walltime``, in sbatch's formats: minutes, minutes:seconds, hours:minutes:seconds,
  days-hours, days-hours:minutes, days-hours:minutes:seconds; 0, UNLIMITED or INFINITE: none;
- ``--gres=gpu:N`` (per node: only for one task) and ``--gpus-per-task`` -> each task's GPUs;
- ``-p/--partition`` -> ``queue``; ``-J/--job-name`` -> ``metadata.name`` (default: the script's name);
- ``-a/--array=0-B[%N]`` -> ``array`` (``count`` B+1, ``parallelism`` N);
- ``-d/--dependency=afterok:ID[:ID...]`` (and afternotok, afterany, aftercorr; ``,`` between types)
  -> ``dependsOn``; ``-H/--hold`` -> submitted held;
- ``-o/--output``, ``-e/--error`` are noted, not refused: fedq keeps every task's output (``fedq logs``).

Anything else is refused with its line: a job must not run with less than its script asked for.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from federation.submitfiles import Refused, Submission, job_name, mebibytes, memory_quantity

DIRECTIVE = "#SBATCH"
INTERPRETERS = ("sh", "bash", "dash", "ksh", "zsh", "python", "python3")
"""What runs a script's body given as ``-c BODY``: the task's command is ``[interpreter, -c, body]``."""
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_ARRAY = re.compile(r"^(\d+)(?:-(\d+))?(?:%(\d+))?$")
_CONDITIONS = ("afterok", "afternotok", "afterany", "aftercorr")
SHORT = {"n": "ntasks", "c": "cpus-per-task", "t": "time", "p": "partition", "a": "array", "d": "dependency"}
SHORT |= {"J": "job-name", "H": "hold", "o": "output", "e": "error"}
FLAGS = ("hold",)
"""Options that take no value."""


@dataclass
class _Script:
    """What the directives asked for so far, and the line each came from (for refusals that need
    two directives to be seen together)."""

    ntasks: int = 1
    cpus: float = 1.0
    mem: tuple[float, int] | None = None  # per node, MiB; its line
    mem_per_cpu: tuple[float, int] | None = None
    gpus: tuple[int, int] | None = None  # --gres, per node
    gpus_per_task: int | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    hold: bool = False
    notes: list[tuple[int, str]] = field(default_factory=list)  # (line, what)


def duration(text: str) -> int | None:
    """Seconds from a Slurm time limit; None for no limit. ValueError for what sbatch would refuse."""
    if text.strip().upper() in ("0", "UNLIMITED", "INFINITE"):
        return None
    match = _TIME.match(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a Slurm time: minutes, minutes:seconds, hours:minutes:seconds, days-hours, "
            "days-hours:minutes or days-hours:minutes:seconds"
        )
    days, first, second, third = (int(part) if part else None for part in match.groups())
    if days is not None:  # days-hours[:minutes[:seconds]]
        return ((days * 24 + (first or 0)) * 60 + (second or 0)) * 60 + (third or 0)
    if third is not None:  # hours:minutes:seconds
        return ((first or 0) * 60 + (second or 0)) * 60 + third
    return (first or 0) * 60 + (second or 0)  # minutes[:seconds]


def array(text: str) -> dict[str, int]:
    """``spec.array`` from sbatch's ``--array=0-B[%N]`` (``fedq submit --array`` takes the same)."""
    match = _ARRAY.match(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r}: fedq arrays are a range 0-B with an optional %N (at most N running at once); "
            "index lists (0,3,7) and steps (0-15:4) cannot be mapped"
        )
    first, last, most = match.groups()
    start = int(first)
    end = start if last is None else int(last)
    limit = None if most is None else int(most)
    if start != 0:
        raise ValueError(
            f"{text!r}: fedq numbers an array's elements from 0 (their ids end in -0, -1, ...; a task reads its "
            f"index there, in FEDQ_JOB_ID), so elements {start}-{end} would run as 0-{end - start}: write "
            f"0-{end - start} and add {start} to the index in the script"
        )
    if limit is not None and limit < 1:
        raise ValueError(f"{text!r}: %N must be at least 1")
    return {"count": end + 1} | ({} if limit is None else {"parallelism": limit})


def dependencies(text: str) -> list[dict[str, str]]:
    """``dependsOn`` from ``afterok:ID[:ID...][,afterany:ID...]`` (all must hold, as Slurm's ``,``)."""
    if "?" in text:
        raise ValueError("'?' (any one of them) cannot be mapped: fedq waits for all of a job's dependencies")
    waits = []
    for part in text.split(","):
        condition, _, ids = part.partition(":")
        if condition not in _CONDITIONS or not ids:
            raise ValueError(
                f"{part!r} cannot be mapped: fedq waits with {', '.join(_CONDITIONS)}, each as TYPE:ID[:ID...]"
            )
        if "+" in ids:
            raise ValueError(f"{part!r}: a delay (+minutes) cannot be mapped")
        waits += [{"job": job_id, "condition": condition} for job_id in ids.split(":")]
    return waits


def _count(text: str, what: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r}: {what} must be a whole number of at least 1")
    return int(text)


def _size(text: str) -> float:
    mib = mebibytes(text)
    if mib is None:
        raise ValueError(f"{text!r} is not a size: MiB, or a number with K, M, G or T, e.g. 4G")
    if mib == 0:
        raise ValueError("0 (all of a node's memory) cannot be mapped: fedq places tasks, not whole nodes")
    return mib


def _gres(text: str) -> int:
    kind, _, rest = text.partition(":")
    if kind != "gpu" or "," in rest:
        raise ValueError(f"{text!r}: only gpu[:N] can be mapped (fedq's GPUs are nvidia.com/gpu)")
    if ":" in rest:
        raise ValueError(f"{text!r}: a GPU type cannot be mapped: write gpu:N and pick the cluster by its labels")
    return _count(rest or "1", "the number of GPUs")


def _partition(script: _Script, value: str) -> None:
    if "," in value:
        raise ValueError("several partitions cannot be mapped: a fedq job goes to one queue")
    script.spec["queue"] = value


def _time(script: _Script, value: str) -> None:
    seconds = duration(value)
    if seconds is not None:
        script.spec["walltime"] = seconds


def _note(script: _Script, value: str, line: int) -> None:
    script.notes.append((line, f"output is kept by fedq, not written to {value}: read it with `fedq logs ID`"))


Handler = Callable[[_Script, str, int], None]
HANDLERS: dict[str, Handler] = {
    "ntasks": lambda s, v, _: setattr(s, "ntasks", _count(v, "--ntasks")),
    "cpus-per-task": lambda s, v, _: setattr(s, "cpus", _count(v, "--cpus-per-task")),
    "mem": lambda s, v, line: setattr(s, "mem", (_size(v), line)),
    "mem-per-cpu": lambda s, v, line: setattr(s, "mem_per_cpu", (_size(v), line)),
    "time": lambda s, v, _: _time(s, v),
    "gres": lambda s, v, line: setattr(s, "gpus", (_gres(v), line)),
    "gpus-per-task": lambda s, v, _: setattr(s, "gpus_per_task", _count(v, "--gpus-per-task")),
    "partition": lambda s, v, _: _partition(s, v),
    "job-name": lambda s, v, _: setattr(s, "name", v),
    "array": lambda s, v, _: s.spec.__setitem__("array", array(v)),
    "dependency": lambda s, v, _: s.spec.setdefault("dependsOn", []).extend(dependencies(v)),
    "hold": lambda s, _, __: setattr(s, "hold", True),
    "output": _note,
    "error": _note,
}


def _options(words: list[str]) -> list[tuple[str, str, str]]:
    """``(name, value, as written)`` for each option of one directive line: ``--mem=4G``, ``--mem 4G``,
    ``-n4``, ``-n 4``, ``--hold``."""
    found = []
    at = 0
    while at < len(words):
        word = words[at]
        if word.startswith("--"):
            name, joined, value = word[2:].partition("=")
        elif word.startswith("-") and len(word) > 1:
            name, value = SHORT.get(word[1], word[1:]), word[2:]
            joined = "=" if value else ""
        else:
            raise ValueError(f"{word!r} is not an option: each #SBATCH line holds options such as --ntasks=4")
        if not joined and name not in FLAGS and at + 1 < len(words) and not words[at + 1].startswith("-"):
            at += 1
            value = words[at]
        found.append((name, value, word))
        at += 1
    return found


def command(path: str, first_line: str, body: str) -> list[str]:
    """The task's command: the ``#!`` line's interpreter running the whole script as ``-c`` text."""
    interpreter = shlex.split(first_line[2:]) if first_line.startswith("#!") else []
    program = interpreter[-1].rsplit("/", 1)[-1] if interpreter else ""
    if not interpreter or program not in INTERPRETERS:
        raise Refused(
            path,
            1,
            f"the first line must be #! and a shell or python ({', '.join(INTERPRETERS)}), as sbatch asks: "
            f"fedq runs the script as `INTERPRETER -c SCRIPT` (found {first_line.strip()!r})",
        )
    return [*interpreter, "-c", body]


def parse(path: str, text: str) -> Submission:
    """The job a batch script describes; ``Refused`` names the first line that cannot be mapped."""
    lines = text.splitlines()
    script = _Script()
    for number, line in enumerate(lines[1:], start=2):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break  # sbatch reads no directive after the first command
        if not stripped.startswith(DIRECTIVE):
            continue
        try:
            words = shlex.split(stripped[len(DIRECTIVE) :], comments=True)
            for name, value, written in _options(words):
                handler = HANDLERS.get(name)
                if handler is None:
                    raise ValueError(
                        f"{written} cannot be mapped: fedq has no such setting; remove the line "
                        "(`fedq submit --help` lists the directives fedq reads)"
                    )
                if name not in FLAGS and not value:
                    raise ValueError(f"{written} needs a value")
                handler(script, value, number)
        except ValueError as exc:
            raise Refused(path, number, f"{DIRECTIVE} {exc}") from None
    return _submission(path, text, script)


def _submission(path: str, text: str, script: _Script) -> Submission:
    """The manifest once every directive was read: the per-node sizes checked against --ntasks."""

    def per_node(option: str, line: int, instead: str) -> None:
        """Slurm's per-node sizes are a task's only when there is one task: fedq places tasks, not nodes."""
        if script.ntasks > 1:
            raise Refused(
                path,
                line,
                f"{DIRECTIVE} {option} is per node, and fedq places {script.ntasks} tasks, not nodes: give {instead}",
            )

    resources: dict[str, Any] = {"cpu": script.cpus}
    if script.mem is not None and script.mem_per_cpu is not None:
        raise Refused(path, script.mem_per_cpu[1], f"{DIRECTIVE} --mem-per-cpu and --mem exclude each other")
    if script.mem is not None:
        per_node("--mem", script.mem[1], "--mem-per-cpu (the memory of each of a task's CPUs) instead")
        resources["memory"] = memory_quantity(script.mem[0])
    if script.mem_per_cpu is not None:
        resources["memory"] = memory_quantity(script.mem_per_cpu[0] * script.cpus)
    gpus = script.gpus_per_task
    if script.gpus is not None:
        per_node("--gres", script.gpus[1], "--gpus-per-task instead")
        gpus = script.gpus[0]
    if gpus:
        from federation.models.resources import GPU

        resources[GPU] = gpus
    lines = text.splitlines()
    task = {"name": "main", "replicas": script.ntasks, "resources": resources}
    task["command"] = command(path, lines[0] if lines else "", text)
    manifest = {
        "apiVersion": "fedq/v1",
        "kind": "Job",
        "metadata": {"name": script.name or job_name(path)},
        "spec": {**script.spec, "tasks": [task]},
    }
    return Submission(manifest, hold=script.hold, notes=[f"{path}:{line}: {note}" for line, note in script.notes])
