"""The embedded store: etcd's semantics in one process, for ``fedq up --store memory``, simulator, tests.

Every method runs without awaiting, so each is atomic on the event loop. Leases expire by the injected
clock: due leases are reaped at the start of every operation, by ``expire_leases()``, and, when a
``lease_check_interval`` is set (the default with a ``SystemClock``), by a background task so
watchers see expiries even when nobody writes.
"""

from __future__ import annotations

import asyncio
import heapq
import operator
from bisect import bisect_left
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

from sortedcontainers import SortedList

from federation.store.base import DEFAULT_MAX_TXN_OPS, check_txn
from federation.store.errors import CompactedError, LeaseNotFound, StoreError, StoreUnavailable
from federation.store.types import (
    Compare,
    KeyValue,
    MemberSpace,
    Op,
    StoreSnapshot,
    TxnResponse,
    TxnResult,
    WatchEvent,
)
from policies.clock import Clock, SystemClock

DEFAULT_HISTORY_LIMIT = 100_000
"""Events kept for watch replay; older history is compacted, as etcd's revision auto-compaction does."""
MEMORY_MEMBER = "memory"

_SYSTEM_CLOCK_LEASE_CHECK = 0.25
_COMPARE_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt}


@dataclass
class _Lease:
    ttl: float
    deadline: float
    keys: set[str] = field(default_factory=set)


class MemoryStore:
    """In-process store with global revisions, leases, watch history and compaction."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        max_txn_ops: int = DEFAULT_MAX_TXN_OPS,
        history_limit: int | None = DEFAULT_HISTORY_LIMIT,
        lease_check_interval: float | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        if history_limit is not None and history_limit < 1:
            raise ValueError("history_limit must be at least 1 (or None for unlimited)")
        self.max_txn_ops = max_txn_ops
        self._history_limit = history_limit
        if lease_check_interval is None and isinstance(self.clock, SystemClock):
            lease_check_interval = _SYSTEM_CLOCK_LEASE_CHECK
        self._lease_check_interval = lease_check_interval
        self._lease_task: asyncio.Task[None] | None = None
        self._kvs: dict[str, KeyValue] = {}
        self._keys: SortedList = SortedList()
        self._bytes = 0  # live keys and values, what ``size`` answers
        self._revision = 1
        self._compact_revision = 0
        self._events: list[WatchEvent] = []
        self._events_base = 0  # absolute position of self._events[0], so watch cursors survive trimming
        self._leases: dict[int, _Lease] = {}
        self._lease_deadlines: list[tuple[float, int]] = []
        self._next_lease = 1
        self._changed = asyncio.Event()
        self._available = True
        self._closed = False

    async def get(self, key: str) -> KeyValue | None:
        self._begin()
        return self._kvs.get(key)

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]:
        self._begin()
        return self._range(prefix, limit)

    async def snapshot(
        self, prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0
    ) -> StoreSnapshot:
        self._begin()
        if not revision or revision >= self._revision:
            return StoreSnapshot(self._revision, self._range(prefix, limit, end))
        return StoreSnapshot(revision, self._range_at(revision, prefix, limit, end))

    async def pages(self, prefix: str, *, end: str | None = None) -> AsyncGenerator[StoreSnapshot, None]:
        yield await self.snapshot(prefix, end=end)

    async def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        result = await self.txn((), (Op.put(key, value, lease),))
        return result.revision

    async def delete(self, key: str) -> bool:
        result = await self.txn((), (Op.delete(key),))
        return result.responses[0] == 1

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        check_txn(compares, success, failure, self.max_txn_ops)
        self._begin()
        succeeded = all(self._holds(compare) for compare in compares)
        ops = success if succeeded else failure
        for op in ops:
            if op.kind == "put" and op.lease and op.lease not in self._leases:
                raise LeaseNotFound(f"lease {op.lease} not found")
        revision = self._revision + 1
        responses = [self._apply(op, revision) for op in ops]
        self._commit(revision)
        return TxnResult(succeeded, self._revision, responses)

    async def revision(self) -> int:
        self._begin()
        return self._revision

    async def grant(self, ttl: float) -> int:
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive, got {ttl}")
        self._begin()
        lease = self._next_lease
        self._next_lease += 1
        self._leases[lease] = _Lease(ttl, self.clock.now() + ttl)
        heapq.heappush(self._lease_deadlines, (self._leases[lease].deadline, lease))
        return lease

    async def keepalive(self, lease: int) -> None:
        self._begin()
        held = self._leases.get(lease)
        if held is None:
            raise LeaseNotFound(f"lease {lease} not found")
        held.deadline = self.clock.now() + held.ttl
        heapq.heappush(self._lease_deadlines, (held.deadline, lease))

    async def revoke(self, lease: int) -> None:
        self._begin()
        if lease not in self._leases:
            raise LeaseNotFound(f"lease {lease} not found")
        self._drop_lease(lease)

    async def watch(
        self, prefix: str, *, start_revision: int | None = None, end: str | None = None, previous: bool = True
    ) -> AsyncGenerator[WatchEvent, None]:
        self._begin()
        if start_revision is None:
            start_revision = self._revision + 1
        elif start_revision < 1:
            raise ValueError(f"start_revision must be at least 1, got {start_revision}")
        if start_revision < self._compact_revision:
            raise CompactedError(self._compact_revision)
        index = bisect_left(self._events, start_revision, key=lambda event: event.revision)
        position = self._events_base + index
        while not self._closed:
            if self._available and position < self._events_base:
                raise CompactedError(self._compact_revision)
            if self._available and position - self._events_base < len(self._events):
                event = self._events[position - self._events_base]
                position += 1
                if event.revision >= start_revision and _within(event.key, prefix, end):
                    yield event
                continue
            await self._changed.wait()

    async def require_history(self, revision: int) -> None:
        self._begin()
        if revision < 1:
            raise ValueError(f"revision must be at least 1, got {revision}")
        if revision < self._compact_revision:
            raise CompactedError(self._compact_revision)

    async def size(self) -> int:
        """The live keys' and values' bytes: no history or free pages to count, unlike etcd's file."""
        self._begin()
        return self._bytes

    async def members(self) -> list[MemberSpace]:
        """One member whose every byte is in use: nothing here is ever freed but not given back."""
        self._begin()
        return [MemberSpace(MEMORY_MEMBER, self._bytes, self._bytes, True)]

    async def defragment(self, member: str) -> None:
        self._begin()
        if member != MEMORY_MEMBER:
            raise ValueError(f"no store member {member!r}: the memory store's one member is {MEMORY_MEMBER!r}")

    async def compact(self, revision: int, *, physical: bool = False) -> None:
        self._begin()
        if revision > self._revision:
            raise ValueError(f"cannot compact at {revision}: the store is at revision {self._revision}")
        self._compact_to(revision)

    async def close(self) -> None:
        self._closed = True
        self._notify()
        if self._lease_task is not None:
            self._lease_task.cancel()
            self._lease_task = None

    def expire_leases(self) -> int:
        """Reap the leases whose deadline has passed on the clock; return how many expired."""
        now = self.clock.now()
        expired = 0
        while self._lease_deadlines and self._lease_deadlines[0][0] <= now:
            _, lease = heapq.heappop(self._lease_deadlines)
            held = self._leases.get(lease)
            if held is not None and held.deadline <= now:
                self._drop_lease(lease)
                expired += 1
        return expired

    def set_available(self, available: bool) -> None:
        """Simulate losing and regaining the store: operations raise, watches pause, then resume."""
        self._available = available
        self._notify()

    def _begin(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if not self._available:
            raise StoreUnavailable("the memory store is marked unavailable")
        if self._lease_check_interval is not None and self._lease_task is None:
            self._lease_task = asyncio.get_running_loop().create_task(self._reap_leases(self._lease_check_interval))
        self.expire_leases()

    async def _reap_leases(self, interval: float) -> None:
        while not self._closed:
            await asyncio.sleep(interval)
            if self._available:
                self.expire_leases()

    def _range(self, prefix: str, limit: int, end: str | None = None) -> list[KeyValue]:
        found: list[KeyValue] = []
        for key in self._keys.irange(minimum=prefix):
            if not _within(key, prefix, end) or (limit and len(found) >= limit):
                break
            found.append(self._kvs[key])
        return found

    def _range_at(self, revision: int, prefix: str, limit: int, end: str | None) -> list[KeyValue]:
        """The range as it stood at ``revision``: today's keys with every later change undone, from the
        watch history (the oldest later change of a key says what it held before)."""
        if revision < self._compact_revision:
            raise CompactedError(self._compact_revision)
        then: dict[str, KeyValue | None] = {}
        for event in reversed(self._events):
            if event.revision <= revision:
                break
            if _within(event.key, prefix, end):
                then[event.key] = event.prev if event.type == "put" else event.kv
        kvs: dict[str, KeyValue | None] = {kv.key: kv for kv in self._range(prefix, 0, end)}
        kvs.update(then)
        found = [kv for _, kv in sorted(kvs.items()) if kv is not None]
        return found[:limit] if limit else found

    def _holds(self, compare: Compare) -> bool:
        kv = self._kvs.get(compare.key)
        actual: int | bytes
        if compare.target == "value":
            if kv is None:
                return False
            actual = kv.value
        elif compare.target == "version":
            actual = kv.version if kv is not None else 0
        else:
            actual = kv.mod_revision if kv is not None else 0
        if type(actual) is not type(compare.operand):
            raise TypeError(f"compare on {compare.target} needs {type(actual).__name__}, got {compare.operand!r}")
        return bool(_COMPARE_OPS[compare.op](actual, compare.operand))

    def _apply(self, op: Op, revision: int) -> TxnResponse:
        if op.kind == "get":
            return self._kvs.get(op.key)
        if op.kind == "count":
            return len(self._range(op.key, 0))
        if op.kind == "range":
            return self._range(op.key, 0)
        if op.kind == "put":
            self._put(op.key, op.value, op.lease, revision)
            return None
        if op.kind == "delete":
            return int(self._delete(op.key, revision))
        keys = list(self._keys.irange(minimum=op.key))
        deleted = 0
        for key in keys:
            if not key.startswith(op.key):
                break
            deleted += self._delete(key, revision)
        return deleted

    def _put(self, key: str, value: bytes, lease: int, revision: int) -> None:
        prev = self._kvs.get(key)
        self._bytes += len(key) + len(value) - (0 if prev is None else len(key) + len(prev.value))
        if prev is None:
            self._keys.add(key)
            kv = KeyValue(key, value, revision, revision, 1, lease)
        else:
            kv = KeyValue(key, value, prev.create_revision, revision, prev.version + 1, lease)
            if prev.lease and prev.lease != lease and prev.lease in self._leases:
                self._leases[prev.lease].keys.discard(key)
        if lease:
            self._leases[lease].keys.add(key)
        self._kvs[key] = kv
        self._events.append(WatchEvent("put", key, kv, revision, prev))

    def _delete(self, key: str, revision: int) -> bool:
        prev = self._kvs.pop(key, None)
        if prev is None:
            return False
        self._keys.remove(key)
        self._bytes -= len(key) + len(prev.value)
        if prev.lease and prev.lease in self._leases:
            self._leases[prev.lease].keys.discard(key)
        self._events.append(WatchEvent("delete", key, prev, revision))
        return True

    def _drop_lease(self, lease: int) -> None:
        """Delete the lease and its keys in one revision, as etcd does."""
        held = self._leases.pop(lease)
        revision = self._revision + 1
        for key in sorted(held.keys):
            self._delete(key, revision)
        self._commit(revision)

    def _commit(self, revision: int) -> None:
        if not self._events or self._events[-1].revision != revision:
            return
        self._revision = revision
        limit = self._history_limit
        if limit is not None and len(self._events) > limit + limit // 4:
            self._compact_to(self._events[len(self._events) - limit].revision)
        self._notify()

    def _compact_to(self, revision: int) -> None:
        if revision <= self._compact_revision:
            return
        self._compact_revision = revision
        cut = bisect_left(self._events, revision, key=lambda event: event.revision)
        del self._events[:cut]
        self._events_base += cut

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


def _within(key: str, prefix: str, end: str | None) -> bool:
    return key.startswith(prefix) if end is None else prefix <= key < end
