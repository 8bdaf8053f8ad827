"""List-then-watch for one resource kind, resuming where it left off, in a thread of its own.

A watch that ends (server timeout, dropped connection) resumes from the last resourceVersion seen, from
an event or a bookmark, so nothing is missed and nothing replayed. When the server no longer has that
version (410 Gone, as an HTTP status or as an ERROR event in the stream) the informer lists afresh and
hands the whole list to its sink, which reconciles it against its cache. The official client's ``Watch``
helper is not used: it retries a 410 itself with the same stale version and offers no way to interrupt a
blocked read, which ``stop()`` needs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

import structlog
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = structlog.get_logger(__name__)

GONE = 410
_TRANSIENT = (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError, KeyError)


class Sink(Protocol):
    def list_started(self) -> None: ...

    def replace(self, items: list[Any], initial: bool) -> None: ...

    def apply(self, event_type: str, obj: Any) -> None: ...


class Expired(Exception):
    """The resourceVersion to resume from is gone from the server's history: list again."""


class Informer:
    def __init__(
        self,
        kind: str,
        list_fn: Callable[..., Any],
        model: Any,
        sink: Sink,
        *,
        page_size: int = 500,
        watch_timeout_seconds: int = 300,
        request_timeout_seconds: float = 30.0,
        max_retry_delay: float = 30.0,
    ) -> None:
        self.kind = kind
        self._list_fn = list_fn
        self._model = model
        self._sink = sink
        self._page_size = page_size
        self._watch_timeout = watch_timeout_seconds
        self._request_timeout = request_timeout_seconds
        self._max_retry_delay = max_retry_delay
        self._rv: str | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None
        self._thread: threading.Thread | None = None

    @property
    def resource_version(self) -> str | None:
        return self._rv

    def start(self) -> None:
        """List once in the caller's thread (so start-up errors surface there), then watch in the background."""
        self._list(initial=True)
        self._thread = threading.Thread(target=self._run, name=f"fedq-informer-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        with self._lock:
            if self._response is not None:
                self._response.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)

    def _list(self, initial: bool) -> None:
        self._sink.list_started()
        items: list[Any] = []
        rv: str | None = None
        token: str | None = None
        while True:
            page = self._list_fn(limit=self._page_size, _continue=token, _request_timeout=self._request_timeout)
            items.extend(page.items)
            rv = rv or page.metadata.resource_version
            token = page.metadata.var_continue
            if not token:
                break
        self._sink.replace(items, initial)
        self._rv = rv
        log.debug("informer listed", kind=self.kind, items=len(items), resource_version=rv)

    def _run(self) -> None:
        delay = 0.0
        while not self._stopping.is_set():
            try:
                if self._rv is None:
                    self._list(initial=False)
                self._watch()
                delay = 0.0
            except Expired:
                log.info("watch expired, listing afresh", kind=self.kind, resource_version=self._rv)
                self._rv = None
            except _TRANSIENT as exc:
                if self._stopping.is_set():
                    break
                if isinstance(exc, ApiException) and exc.status == GONE:
                    self._rv = None
                    continue
                delay = min(max(delay * 2, 0.2), self._max_retry_delay)
                log.warning("watch failed, retrying", kind=self.kind, error=str(exc), retry_in=delay)
                self._stopping.wait(delay)

    def _watch(self) -> None:
        response = self._list_fn(
            watch=True,
            resource_version=self._rv,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout,
            _preload_content=False,
            _request_timeout=(self._request_timeout, self._watch_timeout + self._request_timeout),
        )
        with self._lock:
            self._response = response
        try:
            if not self._stopping.is_set():
                for line in iter_resp_lines(response):
                    if line:
                        self._handle(json.loads(line))
                    if self._stopping.is_set():
                        break
        finally:
            with self._lock:
                self._response = None
            response.close()
            response.release_conn()

    def _handle(self, event: dict[str, Any]) -> None:
        event_type = event["type"]
        raw = event["object"]
        if event_type == "ERROR":
            if raw.get("code") == GONE:
                raise Expired(raw.get("message", ""))
            raise ApiException(status=raw.get("code"), reason=f"{raw.get('reason')}: {raw.get('message')}")
        if event_type == "BOOKMARK":
            self._rv = raw["metadata"]["resourceVersion"]
            return
        obj = self._model.from_dict(raw)
        self._sink.apply(event_type, obj)
        self._rv = obj.metadata.resource_version
