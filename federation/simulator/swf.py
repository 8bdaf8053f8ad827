"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

One line per job, 18 whitespace-separated numeric fields, ``-1`` for unknown; ``;`` lines are header
comments (``; MaxProcs: 100``). The reader keeps only what replaying a trace needs and reports every
line it cannot use, so a replay states exactly which part of a trace it ran.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

GZIP_MAGIC = b"\x1f\x8b"

# The 18 SWF fields in order (1-based in the format's documentation and in our messages).
FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_number",
    "queue_number",
    "partition_number",
    "preceding_job_number",
    "think_time",
)

# "; Key: value" with the key right after the semicolon; deeper-indented comment lines continue the
# previous key (KTH's "; Information:" spans two lines), and "http://..." is not a key.
_HEADER_KEY = re.compile(r";\s?([A-Za-z][A-Za-z0-9_]*):(?:\s+(.*))?$")


class SwfError(ValueError):
    """A malformed SWF line in strict mode; names the line and the field."""

    def __init__(self, path: str, line_no: int, message: str) -> None:
        super().__init__(f"{path}:{line_no}: {message}")
        self.line_no = line_no


@dataclass(slots=True)
class SwfJob:
    """One usable SWF job; times in seconds from the trace start (field 2's origin).

    Not frozen on purpose: a frozen dataclass costs ~3 us more per job to build, a third of the parse.
    """

    id: int
    submit: float
    runtime: float
    walltime: float  # requested time (field 9), or the runtime when the trace does not know it
    procs: int  # allocated processors (field 5), or requested (field 8) when unknown
    user: int
    group: int
    queue: int = -1
    partition: int = -1
    status: int = -1
    trace_wait: float = -1.0  # the wait the original system gave the job (field 3)
    line_no: int = 0

    @property
    def tenant(self) -> str:
        """The accounting identity a replay uses: one tenant per SWF user."""
        return f"user{self.user}" if self.user >= 0 else "user-unknown"

    @property
    def group_queue(self) -> str:
        """The leaf-queue name a replay uses when it maps SWF groups to queues."""
        return f"group{self.group}" if self.group >= 0 else "group-unknown"


class MachineShape(NamedTuple):
    nodes: int
    cores_per_node: int


@dataclass(slots=True)
class SwfTrace:
    """A parsed trace: header, usable jobs in file order, and what was left out and why."""

    path: str
    header: dict[str, str] = field(default_factory=dict)
    jobs: list[SwfJob] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    skipped: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)

    def header_int(self, key: str) -> int | None:
        """A positive integer header value (``MaxProcs``, ``MaxNodes``...), None when absent or unknown."""
        text = self.header.get(key, "").split()
        if not text:
            return None
        try:
            value = int(float(text[0]))
        except ValueError:
            return None
        return value if value > 0 else None

    def peak_in_use(self) -> int:
        """The most processors the original system ran at once: each job from its submit plus its
        traced wait, for its runtime (jobs whose wait the log does not know are left out). The machine
        had at least that many."""
        changes: list[tuple[float, int]] = []
        for job in self.jobs:
            if job.trace_wait >= 0:
                start = job.submit + job.trace_wait
                changes += [(start, job.procs), (start + job.runtime, -job.procs)]
        return _peak(changes)

    def machine(self, nodes: int | None = None) -> MachineShape:
        """The traced machine as nodes of equal cores: MaxProcs/MaxNodes, or MaxProcs over ``nodes``.

        Falls back to MaxNodes for processors and to one core per node when the header is silent, and,
        when both are missing (a log stripped of its header), to the most processors the log shows in
        use at once, or the widest job if more. Cores per node round up, so the machine never has fewer
        processors than the trace's MaxProcs.
        """
        max_nodes = self.header_int("MaxNodes")
        procs = self.header_int("MaxProcs") or max_nodes or max([j.procs for j in self.jobs] + [self.peak_in_use()])
        if procs <= 0:
            raise ValueError(f"{self.path}: no MaxProcs/MaxNodes header and no jobs to size the machine")
        n = nodes if nodes is not None else (max_nodes or procs)
        if n <= 0:
            raise ValueError(f"nodes must be positive, got {n}")
        return MachineShape(n, math.ceil(procs / n))


def _peak(changes: list[tuple[float, int]]) -> int:
    """The highest running sum of (time, change) steps, ends before starts at one instant."""
    peak = level = 0
    for _, change in sorted(changes):
        level += change
        peak = max(peak, level)
    return peak


def read_swf(path: str | Path, *, strict: bool = False, limit: int | None = None) -> SwfTrace:
    """Parse an SWF file, gzipped or plain (detected by its magic bytes, not its name).

    Jobs whose runtime or submit time is unknown (< 0) or whose processor count is not positive are
    skipped and counted. A line that is not 18 finite numbers is reported as a warning with its line
    number, or raises ``SwfError`` in ``strict`` mode. ``limit`` stops after that many usable jobs.
    """
    try:
        raw = Path(path).read_bytes()
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:  # missing or unreadable, or a gzip stream cut short or corrupt
        raise ValueError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    trace = SwfTrace(path=str(path))
    jobs = trace.jobs
    last_key = ""
    for line_no, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if parts[0][0] == ";":
            last_key = _read_header_line(line.strip(), trace.header, last_key)
            continue
        values = _parse_fields(line, parts)
        if isinstance(values, str):
            if strict:
                raise SwfError(str(path), line_no, values)
            trace.warnings.append((line_no, values))
            continue
        submit, runtime = float(values[1]), float(values[3])
        procs = values[4] if values[4] > 0 else values[7]
        reason = _skip_reason(submit, runtime, procs)
        if reason:
            trace.skipped += 1
            trace.skip_reasons[reason] += 1
            continue
        jobs.append(
            SwfJob(
                int(values[0]),
                submit,
                runtime,
                float(values[8]) if values[8] > 0 else runtime,
                int(procs),
                int(values[11]),
                int(values[12]),
                int(values[14]),
                int(values[15]),
                int(values[10]),
                float(values[2]),
                line_no,
            )
        )
        if limit is not None and len(jobs) >= limit:
            break
    return trace


def split_nodes(total_nodes: int, n_clusters: int) -> list[int]:
    """Nodes per cluster when one traced machine is split evenly; the remainder goes to the first ones."""
    if n_clusters <= 0:
        raise ValueError(f"n_clusters must be positive, got {n_clusters}")
    if total_nodes < n_clusters:
        raise ValueError(f"cannot split {total_nodes} nodes into {n_clusters} clusters of at least one node")
    base, extra = divmod(total_nodes, n_clusters)
    return [base + 1 if i < extra else base for i in range(n_clusters)]


def _read_header_line(text: str, header: dict[str, str], last_key: str) -> str:
    """Record one comment line; returns the key that a following continuation line extends."""
    match = _HEADER_KEY.match(text)
    if match:
        key, value = match.group(1), (match.group(2) or "").strip()
        header[key] = f"{header[key]}\n{value}" if key in header else value
        return key
    rest = text[1:].strip()
    if last_key and rest:
        header[last_key] = f"{header[last_key]}\n{rest}"
    return last_key


def _parse_fields(line: str, parts: list[str]) -> Sequence[float] | str:
    """The line's 18 values, or why it is malformed: naming the field makes the fix obvious."""
    if len(parts) != len(FIELDS):
        return f"expected {len(FIELDS)} fields, found {len(parts)}"
    if "." not in line:
        # Most archive lines are all integers, and int() parses them faster than float() does.
        try:
            return list(map(int, parts))
        except ValueError:
            pass  # "1e3" or not a number at all: float() decides below
    try:
        values = list(map(float, parts))
    except ValueError:
        values = []
    if values and all(map(math.isfinite, values)):
        return values
    bad = next(i for i, part in enumerate(parts) if not _is_finite_number(part))
    return f"field {bad + 1} ({FIELDS[bad]}): {parts[bad]!r} is not a finite number"


def _is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _skip_reason(submit: float, runtime: float, procs: float) -> str:
    """Why a well-formed job cannot be replayed ("" when it can)."""
    if runtime < 0:
        return "unknown runtime"
    if submit < 0:
        return "unknown submit time"
    if procs <= 0:
        return "unknown processor count"
    if procs != int(procs):
        return "fractional processor count"
    return ""
