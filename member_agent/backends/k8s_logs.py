"""Task output on Kubernetes: each fedq pod's container log, read through the pod log API.

stdout and stderr are read apart with the log API's ``stream`` query (Kubernetes 1.32+, the
``PodLogsQuerySplitStreams`` feature); an API server that refuses it gets one merged read, shown as
stdout. Lines carry the kubelet's timestamps (``timestamps=true``). The API has no byte offset, so
a read asks for ``limitBytes`` up to what was read plus ``READ_BYTES`` and skips what it already has:
a stream costs at most its limit (``log_limit``) again per read, and reads stop at the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from member_agent.backends.base import LogLines, TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.k8s_pods import CONTAINER_NAME

log = structlog.get_logger(__name__)

READ_BYTES = 256 * 1024
"""Bytes one read of one stream takes at most past what is already read."""
_SPLIT = {"stdout": "Stdout", "stderr": "Stderr"}


@dataclass
class _Stream:
    offset: int = 0  # bytes of the log (with timestamps) read
    lines: int = 0  # lines handed out
    kept: int = 0  # their text's bytes, as the limit counts them
    full: bool = False  # the limit was reached: nothing more is read


@dataclass
class _Pod:
    launch: TaskLaunch
    streams: dict[str, _Stream] = field(default_factory=lambda: {name: _Stream() for name in _SPLIT})


def parse_time(stamp: str) -> float:
    """An RFC 3339 time with up to nanoseconds (Python reads microseconds)."""
    head, dot, rest = stamp.rstrip("Z").partition(".")
    fraction = ("." + rest[:6]) if dot else ""
    return datetime.fromisoformat(head + fraction + "+00:00").timestamp()


class PodLogs:
    """The runs launched with a ``log_limit``, read until their pod has ended and its log is read."""

    def __init__(self, core: client.CoreV1Api, namespace: str, request_timeout: float) -> None:
        self._core = core
        self._namespace = namespace
        self._timeout = request_timeout
        self._pods: dict[str, _Pod] = {}  # pod name -> what is read of it
        self._split = True  # False once the API server refused the stream query

    def follow(self, name: str, launch: TaskLaunch) -> None:
        if launch.log_limit is not None:
            self._pods[name] = _Pod(launch)

    def read(self, statuses: Mapping[str, TaskReport]) -> list[LogLines]:
        """New lines of every followed pod that has started; a pod that ended (or is gone) is read to
        its end, its streams marked ended, and let go."""
        out: list[LogLines] = []
        for name, pod in list(self._pods.items()):
            status = statuses.get(name)
            if status is not None and status.phase is TaskPhase.PENDING:
                continue  # not started: nothing to read yet
            ended = status is None or status.phase.terminal
            try:
                out.extend(self._read_pod(name, pod, ended))
            except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
                if isinstance(exc, ApiException) and exc.status == 404:
                    out.extend(self._batch(pod, stream, [], 0, True) for stream in pod.streams)
                    del self._pods[name]
                else:
                    log.warning("reading a pod's log failed; retried next round", pod=name, error=str(exc))
                continue
            if ended:
                del self._pods[name]
        return out

    def _read_pod(self, name: str, pod: _Pod, ended: bool) -> list[LogLines]:
        out = []
        for stream, state in pod.streams.items():
            if stream == "stderr" and not self._split:
                lines: list[tuple[float, str]] = []
                dropped = 0
            else:
                lines, dropped = self._read_stream(name, stream, state, pod.launch.log_limit or 0, ended)
            if lines or dropped or ended:
                out.append(self._batch(pod, stream, lines, dropped, ended))
        return out

    def _batch(self, pod: _Pod, stream: str, lines: list[tuple[float, str]], dropped: int, ended: bool) -> LogLines:
        launch, state = pod.launch, pod.streams[stream]
        first = state.lines
        state.lines += len(lines)
        return LogLines(
            launch.job_id, launch.task_name, launch.index, launch.epoch, stream, first, tuple(lines), dropped, ended
        )

    def _read_stream(
        self, name: str, stream: str, state: _Stream, limit: int, ended: bool
    ) -> tuple[list[tuple[float, str]], int]:
        """New whole lines of one stream (a pod that ended: all of them, its last line even unfinished)."""
        lines: list[tuple[float, str]] = []
        while not state.full:
            data = self._fetch(name, stream, state.offset + READ_BYTES)
            fresh = data[state.offset :]
            whole = len(data) < state.offset + READ_BYTES  # the log's end is in this read
            usable = fresh if whole and ended else fresh[: fresh.rfind(b"\n") + 1]
            if not usable:
                return lines, 0
            state.offset += len(usable)
            for raw in usable.decode(errors="replace").splitlines():
                stamp, _, text = raw.partition(" ")
                size = len(text.encode()) + 1
                if state.kept + size > limit:
                    state.full = True
                    return lines, max(1, len(data) - state.offset + size)
                state.kept += size
                lines.append((parse_time(stamp), text))
            if whole or not ended:
                return lines, 0
        return lines, 0

    def _fetch(self, name: str, stream: str, limit_bytes: int) -> bytes:
        try:
            # Unread (_preload_content=False): the client's schema says str, the kubelet's log is bytes.
            response: urllib3.HTTPResponse = self._core.read_namespaced_pod_log(  # type: ignore[assignment]
                name,
                self._namespace,
                container=CONTAINER_NAME,
                timestamps=True,
                limit_bytes=limit_bytes,
                _preload_content=False,
                _request_timeout=self._timeout,
                stream=_SPLIT[stream] if self._split else None,
            )
        except ApiException as exc:
            if not (self._split and exc.status in (400, 422) and "stream" in str(exc.body)):
                raise
            log.info("the API server cannot split a pod's log by stream: stdout and stderr read as one")
            self._split = False
            return self._fetch(name, stream, limit_bytes)
        data = response.data
        response.release_conn()
        return data
