"""One store watch per key range for every event stream a replica serves, fanned out in-process: a
thousand open streams cost one watch and a dispatch each, not a thousand watches (issue 33).

Each subscriber is a ``Feed``: the items of its topic after the revision it resumes from, in a bounded
queue. A feed that falls ``depth`` items behind is ended with ``FellBehind`` (its client resumes after
the last id it read) and never slows the others. A feed that resumes before what the shared watch has
passed restarts it from there; the feeds already following ignore what they have seen (each keeps the
revision it has seen up to), so nothing is repeated and nothing missed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Generic, TypeVar

from federation.store import CompactedError, Store, WatchEvent

T = TypeVar("T")

FEED_DEPTH = 1024
"""Revisions a feed may hold unread: past them it ends after what it holds (its client resumes after
the last id it read, so each resume makes progress)."""
RECENT_REVISIONS = 1024
RECENT_BYTES = 16 * 1024 * 1024
"""The revisions a hub keeps to replay to a feed that resumes a little behind it (a new stream's read
of the store is a few revisions behind a busy watch), without restarting the watch: at most this many,
of at most this many bytes of values."""
IDLE = 3600.0
"""Seconds the shared watch's reader waits between revisions before it looks again (nothing is due)."""


class FellBehind(Exception):
    """A stream's reader (its client) fell too far behind the store's changes: it resumes later."""


class Feed(Generic[T]):
    """One stream's items (revision, item) of its topic, from after ``cursor``; see ``Hub.subscribe``."""

    def __init__(self, hub: Hub[T], topic: str, after: int) -> None:
        self.hub = hub
        self.topic = topic
        self.cursor = after
        """The revision this feed has seen up to: later items only (a restarted watch repeats earlier ones)."""
        self._items: deque[tuple[int, T]] = deque()
        self._ready = asyncio.Event()
        self._end: BaseException | None = None
        self._ended = False

    def offer(self, revision: int, item: T) -> None:
        if self._ended or revision <= self.cursor:
            return
        self.cursor = revision
        self._items.append((revision, item))
        self._ready.set()
        if len(self._items) >= FEED_DEPTH:
            self.end(FellBehind(f"this stream's reader fell {FEED_DEPTH} revisions behind the store"))

    def end(self, error: BaseException | None = None) -> None:
        """No more items: the stream ends after what it holds, raising ``error`` if given."""
        if not self._ended:
            self._ended, self._end = True, error
            self._ready.set()

    async def items(self, idle: float) -> AsyncIterator[tuple[int, T] | None]:
        """Each item in order, None after ``idle`` seconds without one (a keepalive is due)."""
        while True:
            while self._items:
                yield self._items.popleft()
            if self._end is not None:
                raise self._end
            if self._ended:
                return
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), idle)
            except TimeoutError:
                yield None

    def close(self) -> None:
        self.hub.unsubscribe(self)


class Hub(Generic[T]):
    """The one watch of ``prefix`` this replica keeps while any stream follows it; ``split`` makes a
    revision's events into (topic, item) pairs once, however many feeds want them."""

    def __init__(
        self,
        store: Store,
        prefix: str,
        split: Callable[[list[WatchEvent]], list[tuple[str, T]]],
    ) -> None:
        self._store = store
        self._prefix = prefix
        self._split = split
        self._feeds: dict[str, set[Feed[T]]] = {}
        self._count = 0
        self._reader: asyncio.Task[None] | None = None
        self._position = 0
        """The revision the shared watch has dispatched up to; it goes on from the one after."""
        self._recent: deque[tuple[int, int, list[tuple[str, T]]]] = deque()
        self._recent_bytes = 0
        self._floor = 0
        """``_recent`` holds every revision after this one, up to ``_position``."""

    @property
    def feeds(self) -> int:
        return self._count

    def subscribe(self, topic: str, after: int) -> Feed[T]:
        """A feed of ``topic``'s items after revision ``after`` (``Feed.close`` when done with it)."""
        feed = Feed(self, topic, after)
        if self._reader is None or after < self._floor:
            self._restart(after)  # before the feed joins: what the others have seen is not what it has
        else:
            for revision, _, pairs in self._recent:
                if revision > after:
                    for item_topic, item in pairs:
                        if item_topic == topic:
                            feed.offer(revision, item)
        self._feeds.setdefault(topic, set()).add(feed)
        self._count += 1
        return feed

    def unsubscribe(self, feed: Feed[T]) -> None:
        topic = self._feeds.get(feed.topic)
        if topic is None or feed not in topic:
            return
        topic.discard(feed)
        self._count -= 1
        if not topic:
            del self._feeds[feed.topic]
        if not self._count and self._reader is not None:
            self._reader.cancel()  # nobody follows: the watch goes, and the next stream starts it again
            self._reader = None

    def _all(self) -> list[Feed[T]]:
        return [feed for feeds in self._feeds.values() for feed in feeds]

    def _restart(self, after: int) -> None:
        """Watch again from after ``after``: the feeds following keep what they have seen."""
        if self._reader is not None:
            self._reader.cancel()
            for feed in self._all():
                feed.cursor = max(feed.cursor, self._position)
        self._position = self._floor = after
        self._recent.clear()
        self._recent_bytes = 0
        self._reader = asyncio.create_task(self._read(after))

    def _keep(self, revision: int, batch: list[WatchEvent], pairs: list[tuple[str, T]]) -> None:
        size = sum(len(e.kv.value if e.kv else b"") + len(e.prev.value if e.prev else b"") for e in batch)
        self._recent.append((revision, size, pairs))
        self._recent_bytes += size
        while len(self._recent) > RECENT_REVISIONS or self._recent_bytes > RECENT_BYTES:
            self._floor, dropped, _ = self._recent.popleft()
            self._recent_bytes -= dropped

    async def _read(self, after: int) -> None:
        reader = asyncio.current_task()
        try:
            async for batch in batches(self._store.watch(self._prefix, start_revision=after + 1), IDLE):
                if not batch:
                    continue
                revision = batch[0].revision
                pairs = self._split(batch)
                for topic, item in pairs:
                    for feed in list(self._feeds.get(topic, ())):
                        feed.offer(revision, item)
                self._position = revision
                self._keep(revision, batch, pairs)
        except CompactedError as exc:
            if self._reader is reader:
                self._compacted(exc.compact_revision)
            return
        except Exception as exc:  # the store's watch failed: every stream says so and ends (clients resume)
            error: BaseException | None = exc
        else:
            error = None  # the store closed
        if self._reader is reader:
            self._reader = None
            for feed in self._all():
                feed.end(error)

    def _compacted(self, compacted: int) -> None:
        """The feeds that need history etcd no longer has end (410); the others go on past it."""
        self._reader = None
        for feed in self._all():
            feed.cursor = max(feed.cursor, self._position)
            if feed.cursor + 1 < compacted:
                feed.end(CompactedError(compacted))
                self.unsubscribe(feed)
        if self._count:
            self._restart(min(feed.cursor for feed in self._all()))


async def batches(events: AsyncGenerator[WatchEvent, None], idle: float) -> AsyncIterator[list[WatchEvent]]:
    """The watch's events a revision at a time, ``[]`` after ``idle`` seconds with none.

    A task reads the watch into a queue. Both stores hand over a revision's events without pausing
    between them (etcd sends a revision in one response, and the memory store appends a txn's at once),
    so when this side wakes up the revisions it finds queued are whole.
    """
    queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in events:
                queue.put_nowait(event)
        except Exception as exc:  # handed to the reader, which raises it
            queue.put_nowait(exc)
        else:
            queue.put_nowait(None)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                items = [await asyncio.wait_for(queue.get(), idle)]
            except TimeoutError:
                yield []
                continue
            while not queue.empty():
                items.append(queue.get_nowait())
            group: list[WatchEvent] = []
            for item in items:
                if isinstance(item, WatchEvent):
                    if group and item.revision != group[0].revision:
                        yield group
                        group = []
                    group.append(item)
                    continue
                if group:
                    yield group
                if item is None:
                    return
                raise item
            yield group
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
