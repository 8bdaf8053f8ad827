"""Job output on the wire: the log chunks an agent ships with its report, the federation's answer to
them, and what ``GET /v1/jobs/{id}/logs`` returns.

A task's stdout and stderr are each a stream of lines numbered from 0; a chunk carries lines from
``first`` on, so a chunk sent twice (a report retried) is written once, and the federation's ack
(``next``) says where the agent goes on from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from federation.models.numbers import Integer

Stream = Literal["stdout", "stderr"]
STREAMS: tuple[Stream, ...] = ("stdout", "stderr")
MAX_LINE_CHARS = 4096
"""A longer line is split by the agent (as a terminal would wrap it)."""
MAX_LINES_PER_CHUNK = 20_000
MAX_CHUNKS_PER_REPORT = 2_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class LogChunk(_Strict):
    """New lines of one stream of one task of one run, as (time printed, text) pairs."""

    job_id: str = Field(min_length=1, max_length=128)
    epoch: Integer = Field(ge=0)
    task: str = Field(min_length=1, max_length=200, description="the task's name and replica index: worker-0")
    stream: Stream
    first: Integer = Field(ge=0, description="the number of lines[0] in its stream")
    lines: list[tuple[float, str]] = Field(default_factory=list, max_length=MAX_LINES_PER_CHUNK)
    dropped: Integer = Field(0, ge=0, description="bytes the cluster did not keep, past its limit")
    ended: bool = Field(False, description="the stream is complete: its task has ended")

    def size(self) -> int:
        return sum(len(text) + 1 for _, text in self.lines)


class LogAck(_Strict):
    """How much of a stream the federation holds (``next``: lines 0 to next-1), and whether it wants more."""

    job_id: str
    epoch: int
    task: str
    stream: Stream
    next: int
    more: bool = Field(description="false: send no more of this stream (the job's output was cut, or it is not yours)")


class LogLimits(_Strict):
    """The federation's ``logs`` limits, sent with each reply: the agent keeps and ships no more."""

    max_bytes_per_job: int = Field(gt=0)
    max_bytes_per_report: int = Field(gt=0)


class LogLine(BaseModel):
    time: float = Field(description="when the line was printed (epoch seconds)")
    task: str
    stream: Stream
    text: str


class JobLogs(BaseModel):
    """``GET /v1/jobs/{id}/logs``: one run's lines, oldest first (stdout and stderr by the time printed)."""

    job: str
    epoch: int = Field(description="the run shown: the job's latest unless ?epoch= asked for another")
    lines: list[LogLine]
    cursor: int = Field(description="where a stream of these logs (watch=true&since=cursor) goes on from")
    cut: bool = Field(description="the run's output passed logs.maxBytesPerJob: the rest was not kept")
    complete: bool = Field(description="every stream of the run has ended: no more lines will come")
