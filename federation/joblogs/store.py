"""The federation's job log store: files under ``logs.dir``, never etcd.

One run of one job is one journal, ``<dir>/<job>/<epoch>.jsonl``: a JSON line ``[time, task, stream,
text]`` per output line, in the order lines arrived (so a byte offset into it is an exact place to
resume a stream from), and beside it ``<epoch>.json``, how many lines of each task's stream it holds,
which streams have ended, its bytes and whether it was cut. Only whole lines are appended, and the
state file is replaced atomically after them (once per report), so a reader never sees half a line.

A run's output past ``maxBytesPerJob`` is cut: what fits is kept, then one marker line, then nothing
more. Every replica may share ``dir``: a job's chunks come from one agent's reports, one at a time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from federation.models.logs import LogAck, LogChunk
from policies.format import format_quantity

_SAFE_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")
CUT_MARKER = "[fedq] output cut at {limit} (logs.maxBytesPerJob): the rest of this run's output was not kept"


@dataclass
class RunState:
    """``<epoch>.json``: what the journal beside it holds."""

    counts: dict[str, int] = field(default_factory=dict)  # "task/stream" -> lines held (0 to n-1)
    ended: set[str] = field(default_factory=set)
    bytes: int = 0  # the lines' text, as the limit counts it
    cut: bool = False

    @property
    def complete(self) -> bool:
        """No more lines will come: cut, or every stream it heard of has ended."""
        return self.cut or (bool(self.counts) and self.ended >= self.counts.keys())

    def dump(self) -> str:
        return json.dumps({"counts": self.counts, "ended": sorted(self.ended), "bytes": self.bytes, "cut": self.cut})

    @classmethod
    def load(cls, text: str) -> RunState:
        data = json.loads(text)
        return cls(dict(data["counts"]), set(data["ended"]), int(data["bytes"]), bool(data["cut"]))


@dataclass(frozen=True)
class Entry:
    time: float
    task: str
    stream: str
    text: str


def stream_key(task: str, stream: str) -> str:
    return f"{task}/{stream}"


class LogStore:
    """Append chunks, read journals; see the module docstring. Writes are synchronous (call them from a
    worker thread) and serialised by one lock: a report's chunks are small and a job has one writer."""

    def __init__(self, root: Path | None, max_bytes_per_job: int) -> None:
        """``root`` None: a temporary directory, removed with this store (a dev server's logs)."""
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if root is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="fedq-logs-")
            root = Path(self._scratch.name)
        self.root = root
        self.max_bytes_per_job = max_bytes_per_job
        self._lock = threading.Lock()
        self.root.mkdir(parents=True, exist_ok=True)

    # ---- paths ------------------------------------------------------------------------------------

    def _dir(self, job_id: str) -> Path:
        if not _SAFE_ID.fullmatch(job_id):
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / job_id

    def journal(self, job_id: str, epoch: int) -> Path:
        return self._dir(job_id) / f"{epoch}.jsonl"

    def _state_path(self, job_id: str, epoch: int) -> Path:
        return self._dir(job_id) / f"{epoch}.json"

    # ---- writing ----------------------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[Callable[[LogChunk, int], tuple[LogAck, int]]]:
        """The writes of one report: ``write(chunk, allowance)`` appends what is new in ``chunk``, at
        most ``allowance`` bytes of it (a rate limit's share), and answers the ack for the agent and the
        bytes taken. Each run's state is read once and saved once, on the way out, after its lines: a
        job of a thousand tasks sends two thousand chunks at its end, and saving the state (which
        lists every stream) after each took seconds, past the agent's lease (issue 33, point 7)."""
        with self._lock:
            states: dict[tuple[str, int], RunState] = {}
            changed: set[tuple[str, int]] = set()

            def write(chunk: LogChunk, allowance: int) -> tuple[LogAck, int]:
                run = (chunk.job_id, chunk.epoch)
                state = states.get(run)
                if state is None:
                    state = states[run] = self.state(*run) or RunState()
                ack, used, wrote = self._write(chunk, allowance, state)
                if wrote:
                    changed.add(run)
                return ack, used

            try:
                yield write
            finally:
                for run in changed:
                    self._save(*run, states[run])

    def _write(self, chunk: LogChunk, allowance: int, state: RunState) -> tuple[LogAck, int, bool]:
        """``writing``'s write, on the run's ``state``; also answers whether it changed."""
        key = stream_key(chunk.task, chunk.stream)
        held = max(state.counts.get(key, 0), 0)
        if state.cut:
            return self._ack(chunk, held, False), 0, False
        skip = max(0, held - chunk.first)
        room = self.max_bytes_per_job - state.bytes
        taken: list[tuple[float, str]] = []
        used = 0
        cut = False
        for when, text in chunk.lines[skip:]:
            size = len(text.encode()) + 1
            if size > room - used:
                cut = True
                break
            if size > allowance - used:
                break
            taken.append((when, text))
            used += size
        whole = skip + len(taken) >= len(chunk.lines)
        cut = cut or (whole and chunk.dropped > 0)
        entries: list[tuple[float, str, str, str]] = [
            (round(when, 6), chunk.task, chunk.stream, text) for when, text in taken
        ]
        if cut:
            when = taken[-1][0] if taken else (chunk.lines[-1][0] if chunk.lines else 0.0)
            marker = CUT_MARKER.format(limit=format_quantity("memory", self.max_bytes_per_job))
            entries.append((round(when, 6), chunk.task, chunk.stream, marker))
        if not entries and not (whole and chunk.ended) and key in state.counts:
            return self._ack(chunk, held, True), 0, False
        self._append(chunk.job_id, chunk.epoch, entries)
        state.counts[key] = max(held, chunk.first + skip + len(taken))
        state.bytes += used
        state.cut = cut
        if whole and chunk.ended:
            state.ended.add(key)
        return self._ack(chunk, state.counts[key], not cut), used, True

    @staticmethod
    def _ack(chunk: LogChunk, held: int, more: bool) -> LogAck:
        return LogAck(
            job_id=chunk.job_id, epoch=chunk.epoch, task=chunk.task, stream=chunk.stream, next=held, more=more
        )

    def _append(self, job_id: str, epoch: int, entries: list[tuple[float, str, str, str]]) -> None:
        path = self.journal(job_id, epoch)
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write("".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in entries))

    def _save(self, job_id: str, epoch: int, state: RunState) -> None:
        path = self._state_path(job_id, epoch)
        part = path.with_suffix(".json.part")
        part.write_text(state.dump(), encoding="utf-8")
        os.replace(part, path)

    # ---- reading ----------------------------------------------------------------------------------

    def state(self, job_id: str, epoch: int) -> RunState | None:
        try:
            return RunState.load(self._state_path(job_id, epoch).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def epochs(self, job_id: str) -> list[int]:
        """The runs of the job that have output here, oldest first."""
        try:
            names = os.listdir(self._dir(job_id))
        except FileNotFoundError:
            return []
        return sorted(int(name[: -len(".jsonl")]) for name in names if name.endswith(".jsonl"))

    def size(self, job_id: str, epoch: int) -> int:
        try:
            return self.journal(job_id, epoch).stat().st_size
        except FileNotFoundError:
            return 0

    def at_line_start(self, job_id: str, epoch: int, offset: int) -> bool:
        """Whether ``offset`` is a place a stream can resume from: 0, or just after a line."""
        if offset == 0:
            return True
        if offset > self.size(job_id, epoch):
            return False
        with self.journal(job_id, epoch).open("rb") as journal:
            journal.seek(offset - 1)
            return journal.read(1) == b"\n"

    def read(self, job_id: str, epoch: int, offset: int = 0) -> tuple[list[Entry], int]:
        """The whole lines after byte ``offset``, and the offset after them."""
        try:
            with self.journal(job_id, epoch).open("rb") as journal:
                journal.seek(offset)
                data = journal.read()
        except FileNotFoundError:
            return [], offset
        end = data.rfind(b"\n") + 1
        entries = []
        for raw in data[:end].splitlines():
            when, task, stream, text = json.loads(raw)
            entries.append(Entry(float(when), str(task), str(stream), str(text)))
        return entries, offset + end

    # ---- retention --------------------------------------------------------------------------------

    def jobs(self) -> list[str]:
        return [name for name in os.listdir(self.root) if _SAFE_ID.fullmatch(name)]

    def remove(self, job_ids: Iterable[str]) -> None:
        for job_id in job_ids:
            shutil.rmtree(self._dir(job_id), ignore_errors=True)
