"""The agent's side of job logs: hold what the backend's runs printed until the federation has it.

Lines wait here per stream (a run's task's stdout or stderr) until a report's reply acks them; each
report carries what its limit (``log_limits.max_bytes_per_report``) allows, shared between the
streams that have lines waiting, so one chatty job cannot hold back the others' output, and at most
``MAX_CHUNKS_PER_REPORT`` of them, taken in turns: a thousand runs ending at once have two thousand
streams to close, and a report listing them all would be refused by its own model, every time, until
the agent, never heard, stopped its runs (issue 33, point 7). A stream keeps
at most ``max_bytes_per_job`` of output; past it, what it drops is counted and told, and the
federation cuts the run's output with a marker line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from federation.models.logs import (
    MAX_CHUNKS_PER_REPORT,
    MAX_LINE_CHARS,
    MAX_LINES_PER_CHUNK,
    LogAck,
    LogChunk,
    LogLimits,
)
from member_agent.backends.base import LogLines

Key = tuple[str, int, str, str]  # job, epoch, task ("name-index"), stream
MIN_SHARE = 16 * 1024  # bytes a stream may send per report however many share the limit


@dataclass
class _Stream:
    base: int = 0  # the number of lines[0] in its stream
    lines: deque[tuple[float, str]] = field(default_factory=deque)
    kept: int = 0  # bytes taken in, as the limit counts them
    dropped: int = 0
    ended: bool = False


def split(text: str) -> list[str]:
    """A line longer than the wire allows, as a terminal would wrap it."""
    return [text[i : i + MAX_LINE_CHARS] for i in range(0, len(text), MAX_LINE_CHARS)] or [""]


class LogShipper:
    def __init__(self) -> None:
        self.limits: LogLimits | None = None  # from the federation's last reply; None: it takes no output
        self._streams: dict[Key, _Stream] = {}

    def add(self, batches: list[LogLines]) -> None:
        if self.limits is None:
            return
        limit = self.limits.max_bytes_per_job
        for batch in batches:
            key = (batch.job_id, batch.epoch, f"{batch.task_name}-{batch.index}", batch.stream)
            stream = self._streams.get(key)
            if stream is None:
                stream = self._streams[key] = _Stream(base=batch.first)
            for when, text in batch.lines:
                for part in split(text):
                    size = len(part.encode()) + 1
                    if stream.kept + size > limit:
                        stream.dropped += size
                        continue
                    stream.kept += size
                    stream.lines.append((when, part))
            stream.dropped += batch.dropped
            stream.ended = stream.ended or batch.ended

    def chunks(self) -> list[LogChunk]:
        """What the next report carries: waiting streams' next lines, within the report's limits; the
        streams it carries go to the back of the line, so the next report starts with the others."""
        if self.limits is None or not self._streams:
            return []
        left = self.limits.max_bytes_per_report
        share = max(MIN_SHARE, left // min(len(self._streams), MAX_CHUNKS_PER_REPORT))
        out: list[LogChunk] = []
        sent: list[Key] = []
        for key, stream in self._streams.items():
            if len(out) == MAX_CHUNKS_PER_REPORT:
                break
            job_id, epoch, task, name = key
            taken: list[tuple[float, str]] = []
            used = 0
            for when, text in stream.lines:
                size = len(text) + 1
                if used + size > min(share, left) or len(taken) == MAX_LINES_PER_CHUNK:
                    break
                taken.append((when, text))
                used += size
            left -= used
            whole = len(taken) == len(stream.lines)
            if not taken and not (whole and (stream.ended or stream.dropped)):
                continue
            sent.append(key)
            out.append(
                LogChunk(
                    job_id=job_id,
                    epoch=epoch,
                    task=task,
                    stream="stderr" if name == "stderr" else "stdout",
                    first=stream.base,
                    lines=taken,
                    dropped=stream.dropped if whole else 0,
                    ended=whole and stream.ended,
                )
            )
        for key in sent:
            self._streams[key] = self._streams.pop(key)
        return out

    def acknowledge(self, acks: list[LogAck], sent: Sequence[LogChunk]) -> None:
        """The federation holds each acked stream up to ``next``: forget those lines, and streams that
        are done (ended and all acked, or that the federation wants no more of)."""
        finished = {(c.job_id, c.epoch, c.task, c.stream) for c in sent if c.ended or c.dropped}
        for ack in acks:
            key = (ack.job_id, ack.epoch, ack.task, ack.stream)
            stream = self._streams.get(key)
            if stream is None:
                continue
            while stream.lines and stream.base < ack.next:
                stream.lines.popleft()
                stream.base += 1
            stream.base = max(stream.base, ack.next)
            if not ack.more or (key in finished and not stream.lines):
                del self._streams[key]

    def waiting(self) -> int:
        """Lines held, not yet acked."""
        return sum(len(stream.lines) for stream in self._streams.values())
