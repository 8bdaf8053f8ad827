"""The production store: etcd v3 over gRPC, with TLS, etcd users and failover between members.

Requests go to aetcd's generated KV, Lease and Watch stubs through ``EtcdChannels`` (which endpoint,
which token, when to fail over: see ``etcd_rpc``); aetcd's own helpers cannot page a range (gRPC's
4 MiB receive limit breaks large prefixes) and its watcher does not resume after a reconnect.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, Callable, Sequence
from operator import attrgetter
from typing import Any

import grpc
import structlog
from aetcd import rpc

from federation.store.base import DEFAULT_MAX_TXN_OPS, DEFAULT_PREFIX, check_txn
from federation.store.connection import EtcdConnection
from federation.store.errors import CompactedError, LeaseNotFound, StoreError, StoreUnavailable
from federation.store.etcd_rpc import (
    DEFAULT_CONNECT_TIMEOUT,
    REQUIRE_LEADER,
    UNAVAILABLE,
    EtcdChannels,
    Link,
    channel_closed_under_us,
    mapped_errors,
    store_error,
)
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

log = structlog.get_logger(__name__)

DEFAULT_PAGE_SIZE = 50_000
"""Keys a range page asks for at most. etcd 3.5 counts every key from a page's start to the range's
end to answer it, so a read of N keys in pages of P walks about N**2 / 2P keys: at 1,000,000 jobs,
pages of 5,000 made etcd spend 11 s of CPU on a 15 s read, pages of 30,000 3.5 s of a 7 s one."""
FIRST_PAGE = 1_000
"""Keys the first page asks for, before the mean size of a key is known."""
PAGE_BYTES = 8 * 1024 * 1024
"""What one range page aims to carry, well under the receive limit below."""
_MAX_RECEIVE_BYTES = 64 * 1024 * 1024
_CHANNEL_OPTIONS: dict[str, Any] = {
    "grpc.max_receive_message_length": _MAX_RECEIVE_BYTES,
    # Notice a dead peer on idle streams; etcd refuses pings more often than every 5 s.
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
    # Reconnect within a second of etcd coming back, not after gRPC's default of up to 120 s.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1_000,
}
_WATCH_RETRYABLE = UNAVAILABLE | {grpc.StatusCode.INTERNAL}
_COMPARE_RESULTS = {
    "==": rpc.Compare.EQUAL,
    "!=": rpc.Compare.NOT_EQUAL,
    "<": rpc.Compare.LESS,
    ">": rpc.Compare.GREATER,
}
_RANGE_ATTEMPTS = 3
# The stub methods each request goes to, picked from the link of the endpoint it is sent on.
_RANGE = attrgetter("kv.Range")
_PUT = attrgetter("kv.Put")
_DELETE = attrgetter("kv.DeleteRange")
_TXN = attrgetter("kv.Txn")
_COMPACT = attrgetter("kv.Compact")
_GRANT = attrgetter("lease.LeaseGrant")
_REVOKE = attrgetter("lease.LeaseRevoke")
_STATUS = attrgetter("maintenance.Status")
_DEFRAGMENT = attrgetter("maintenance.Defragment")
DEFRAGMENT_TIMEOUT = 600.0
"""A member rewrites its whole database file: seconds a hundred megabytes, minutes for gigabytes."""
_WATCH_RETRY_MIN = 0.05
_WATCH_RETRY_MAX = 1.0


class EtcdStore:
    """A store over a real etcd; keys are kept under ``prefix``, callers use keys relative to it.

    ``connection`` is an ``EtcdConnection`` or its URL list (``http://127.0.0.1:2379``, plain)."""

    def __init__(
        self,
        connection: EtcdConnection | str,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_txn_ops: int = DEFAULT_MAX_TXN_OPS,
        timeout: float | None = 10.0,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if isinstance(connection, str):
            connection = EtcdConnection.parse(connection)
        if not prefix:
            raise ValueError("the key prefix must not be empty (etcd has no empty key)")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._settings = (prefix, max_txn_ops, timeout, connect_timeout, page_size)
        self.max_txn_ops = max_txn_ops
        self._prefix = prefix.encode()
        self._page_size = page_size
        self._rpc = EtcdChannels(connection, options=_CHANNEL_OPTIONS, timeout=timeout, connect_timeout=connect_timeout)
        self._maintenance = (
            self._rpc
            if connection.maintenance_cert is None
            else EtcdChannels(
                connection.for_maintenance(), options=_CHANNEL_OPTIONS, timeout=timeout, connect_timeout=connect_timeout
            )
        )

    @property
    def connection(self) -> EtcdConnection:
        return self._rpc.connection

    def another(self) -> EtcdStore:
        """The same store over connections of its own, for another event loop (``federation/lease_keeper.py``)."""
        prefix, max_txn_ops, timeout, connect_timeout, page_size = self._settings
        return EtcdStore(
            self.connection,
            prefix=prefix,
            max_txn_ops=max_txn_ops,
            timeout=timeout,
            connect_timeout=connect_timeout,
            page_size=page_size,
        )

    async def get(self, key: str) -> KeyValue | None:
        response = await self._send(_RANGE, rpc.RangeRequest(key=self._key(key)), retry=True)
        return self._record(response.kvs[0]) if response.kvs else None

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]:
        return (await self.snapshot(prefix, limit=limit)).kvs

    async def snapshot(
        self, prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0
    ) -> StoreSnapshot:
        """Read in pages at one revision; restart if a compaction overtakes a read of the latest one."""
        attempt = 1
        while True:
            try:
                return await self._paged_range(prefix, limit, end, revision)
            except CompactedError:
                if revision or attempt >= _RANGE_ATTEMPTS:
                    raise
                attempt += 1

    async def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        request = rpc.PutRequest(key=self._key(key), value=value, lease=lease)
        response = await self._send(_PUT, request, retry=False)
        return int(response.header.revision)

    async def delete(self, key: str) -> bool:
        response = await self._send(_DELETE, rpc.DeleteRangeRequest(key=self._key(key)), retry=False)
        return bool(response.deleted)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        """One etcd txn, never sent twice: a txn that raised ``StoreUnavailable`` may have applied."""
        check_txn(compares, success, failure, self.max_txn_ops)
        # Filled in place: a message built by keyword and then added is copied, 3-4x the cost per op.
        request = rpc.TxnRequest()
        for compare in compares:
            self._compare(request.compare.add(), compare)
        for ops, into in ((success, request.success), (failure, request.failure)):
            add = into.add
            for op in ops:
                self._request_op(add(), op)
        response = await self._send(_TXN, request, retry=False)
        ops = success if response.succeeded else failure
        raws = response.responses
        if len(raws) != len(ops):
            raise StoreError(f"etcd answered {len(raws)} responses for {len(ops)} txn ops")
        # A put answers nothing (None): most ops of a dispatch are puts, so only the others are read.
        responses: list[TxnResponse] = [None] * len(ops)
        for i, op in enumerate(ops):
            if op.kind != "put":
                responses[i] = self._txn_response(op, raws[i])
        return TxnResult(bool(response.succeeded), int(response.header.revision), responses)

    async def revision(self) -> int:
        response = await self._send(_RANGE, rpc.RangeRequest(key=self._prefix, count_only=True), retry=True)
        return int(response.header.revision)

    async def grant(self, ttl: float) -> int:
        """Grant a lease of ``ttl`` seconds rounded up; etcd itself raises very short TTLs to ~2 s.

        Sent again on another member after an unknown outcome: a lease granted twice leaves one
        unused, which expires by itself."""
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive, got {ttl}")
        response = await self._send(_GRANT, rpc.LeaseGrantRequest(TTL=math.ceil(ttl)), retry=True)
        if response.error:
            raise StoreError(f"lease grant refused: {response.error}")
        return int(response.ID)

    async def keepalive(self, lease: int) -> None:
        """Renew once; safe to send again, so it fails over as a read does."""

        async def renew(link: Link) -> Any:
            call = link.lease.LeaseKeepAlive(timeout=self._rpc.timeout, metadata=link.metadata)
            try:
                await call.write(rpc.LeaseKeepAliveRequest(ID=lease))
                return await call.read()
            finally:
                call.cancel()

        with mapped_errors():
            response = await self._rpc.call(renew, retry=True)
        if response is grpc.aio.EOF or response.TTL <= 0:
            raise LeaseNotFound(f"lease {lease} not found")

    async def revoke(self, lease: int) -> None:
        await self._send(_REVOKE, rpc.LeaseRevokeRequest(ID=lease), retry=False)

    async def watch(
        self, prefix: str, *, start_revision: int | None = None, end: str | None = None, previous: bool = True
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes; after a lost connection, re-watch from the last revision seen + 1.

        etcd delivers all events of one revision in one response, and a reconnect happens only
        between responses, so resuming at ``last + 1`` neither repeats nor skips an event.
        """
        if start_revision is not None and start_revision < 1:
            raise ValueError(f"start_revision must be at least 1, got {start_revision}")
        key = self._key(prefix)
        until = range_end(key) if end is None else self._key(end)
        next_revision = start_revision
        delay = _WATCH_RETRY_MIN
        renewed = False  # a token a restarted member forgot shows as "permission denied": renew it once
        while not self._rpc.closed:
            call: Any = None
            index: int | None = None
            try:
                index, link, _ = await self._rpc.ready()
                call = link.watch.Watch(metadata=(*link.metadata, REQUIRE_LEADER))
                create = rpc.WatchCreateRequest(
                    key=key, range_end=until, start_revision=next_revision or 0, prev_kv=previous
                )
                await call.write(rpc.WatchRequest(create_request=create))
                while True:
                    response = await call.read()
                    if response is grpc.aio.EOF:
                        break
                    if response.compact_revision:
                        raise CompactedError(int(response.compact_revision))
                    if response.canceled:
                        if renewed or "permission denied" not in response.cancel_reason:
                            raise StoreError(f"etcd cancelled the watch: {response.cancel_reason}")
                        renewed = True
                        await self._rpc.authenticate(link, stale=link.token)
                        break
                    if response.created and next_revision is None:
                        next_revision = int(response.header.revision) + 1
                    delay, renewed = _WATCH_RETRY_MIN, False
                    for raw in response.events:
                        event = self._event(raw)
                        next_revision = event.revision + 1
                        yield event
            except grpc.aio.AioRpcError as error:
                if self._rpc.closed:
                    return
                if error.code() not in _WATCH_RETRYABLE:
                    raise store_error(error) from error
                if index is not None:
                    self._rpc.failed(index, error)
                log.warning(
                    "etcd watch lost, resuming", prefix=prefix, next_revision=next_revision, error=error.code().name
                )
            except asyncio.CancelledError:
                if not channel_closed_under_us():
                    raise
                if self._rpc.closed:
                    return
                log.warning("etcd channel closed under the watch, resuming", prefix=prefix, next_revision=next_revision)
            finally:
                if call is not None:
                    call.cancel()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _WATCH_RETRY_MAX)

    async def require_history(self, revision: int) -> None:
        """A one-key read at ``revision``: etcd refuses it if that revision is compacted (a revision
        not yet written is no loss: a watch from it waits for it)."""
        if revision < 1:
            raise ValueError(f"revision must be at least 1, got {revision}")
        request = rpc.RangeRequest(key=self._prefix, revision=revision, limit=1, keys_only=True)
        with mapped_errors():
            try:
                await self._rpc.unary(_RANGE, request, retry=True)
            except grpc.aio.AioRpcError as error:
                details = error.details() or ""
                if error.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
                    raise CompactedError(revision) from error
                if error.code() != grpc.StatusCode.OUT_OF_RANGE or "future" not in details:
                    raise

    async def size(self) -> int:
        """The database size the member in use reports (etcd's quota counts it; any user may ask)."""
        response = await self._send(_STATUS, rpc.StatusRequest(), retry=True)
        return int(response.dbSize)

    async def compact(self, revision: int, *, physical: bool = False) -> None:
        """Drop history before ``revision``; compacting at or below an earlier compaction is a no-op
        (so a compaction whose outcome was lost is simply sent again)."""
        request = rpc.CompactionRequest(revision=revision, physical=physical)
        with mapped_errors():
            try:
                await self._rpc.unary(_COMPACT, request, retry=True)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.OUT_OF_RANGE:
                    raise
                if "future revision" in (error.details() or ""):
                    raise ValueError(f"cannot compact at {revision}: {error.details()}") from error

    async def members(self) -> list[MemberSpace]:
        """Every endpoint's status in turn (by its ``host:port``); one that does not answer is left out."""
        found = []
        for index, endpoint in enumerate(self.connection.endpoints):
            try:
                with mapped_errors():
                    status = await self._rpc.to_member(index, _STATUS, rpc.StatusRequest(), timeout=self._rpc.timeout)
            except StoreUnavailable:
                continue
            leads = status.leader == status.header.member_id
            found.append(MemberSpace(endpoint.target, int(status.dbSize), int(status.dbSizeInUse), leads))
        return found

    async def defragment(self, member: str) -> None:
        """Through the maintenance certificate's user when the connection has one (etcd: root only)."""
        targets = [endpoint.target for endpoint in self.connection.endpoints]
        if member not in targets:
            raise ValueError(f"no etcd member {member!r} in this store's endpoints {targets}")
        with mapped_errors():
            await self._maintenance.to_member(
                targets.index(member), _DEFRAGMENT, rpc.DefragmentRequest(), timeout=DEFRAGMENT_TIMEOUT
            )

    async def reconnect(self) -> None:
        """Drop the gRPC channels; the next call opens new ones and watches resume. For fault injection."""
        await self._rpc.reset()

    async def close(self) -> None:
        await self._rpc.close()
        if self._maintenance is not self._rpc:
            await self._maintenance.close()

    async def _send(self, method: Callable[[Link], Any], request: Any, *, retry: bool) -> Any:
        with mapped_errors():
            return await self._rpc.unary(method, request, retry=retry)

    def pages(self, prefix: str, *, end: str | None = None) -> AsyncGenerator[StoreSnapshot, None]:
        """``snapshot``'s keys page by page at one revision, each next page asked for before this one is
        handed over: a caller that works on a page (a cold load parsing records) does so while etcd
        serves the next. A compaction that overtakes the read raises ``CompactedError``: read again."""
        return self._pages(prefix, 0, end, 0)

    async def _paged_range(self, prefix: str, limit: int, until: str | None, revision: int) -> StoreSnapshot:
        found: list[KeyValue] = []
        async for page in self._pages(prefix, limit, until, revision):
            revision = page.revision
            found.extend(page.kvs)
        return StoreSnapshot(revision, found)

    async def _pages(
        self, prefix: str, limit: int, until: str | None, revision: int
    ) -> AsyncGenerator[StoreSnapshot, None]:
        """Pages sized by keys and by bytes: each page asks for as many keys as fit ``PAGE_BYTES`` at the
        mean size of the keys read so far (a page over gRPC's receive limit is asked again smaller,
        ``_range_page``), so large records (up to ``api.maxRecordBytes`` each) never make a range unreadable."""
        start = self._key(prefix)
        end = range_end(start) if until is None else self._key(until)
        read_keys = read_bytes = 0
        first = min(self._page_size, limit or FIRST_PAGE)
        ahead = asyncio.ensure_future(self._range_page(start, end, first, revision))
        try:
            while True:
                response = await ahead
                revision = revision or int(response.header.revision)
                kvs = [self._record(raw) for raw in response.kvs]
                read_keys += len(kvs)
                if not response.more or not kvs or (limit and read_keys >= limit):
                    yield StoreSnapshot(revision, kvs)
                    return
                read_bytes += sum(len(raw.key) + len(raw.value) for raw in response.kvs)
                fits = max(1, min(self._page_size, PAGE_BYTES * read_keys // max(read_bytes, 1)))
                page = fits if not limit else min(fits, limit - read_keys)
                start = response.kvs[-1].key + b"\0"
                ahead = asyncio.ensure_future(self._range_page(start, end, page, revision))
                yield StoreSnapshot(revision, kvs)
        finally:
            if not ahead.done():
                ahead.cancel()
                await asyncio.wait([ahead])  # ends the read ahead before the caller goes on
            if not ahead.cancelled():
                ahead.exception()  # a page read ahead that nobody awaits now: its error is not news

    async def _range_page(self, start: bytes, end: bytes, page: int, revision: int) -> Any:
        """One range page; asked again at half its keys while it is over gRPC's receive limit."""
        while True:
            request = rpc.RangeRequest(key=start, range_end=end, limit=page, revision=revision)
            with mapped_errors():
                try:
                    return await self._rpc.unary(_RANGE, request, retry=True)
                except grpc.aio.AioRpcError as error:
                    details = error.details() or ""
                    if error.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
                        raise CompactedError(revision) from error
                    if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details and page > 1:
                        page = max(1, page // 2)
                        continue
                    raise

    def _key(self, key: str) -> bytes:
        return self._prefix + key.encode()

    def _record(self, raw: Any) -> KeyValue:
        # Positional: this runs once per record of a large range, where keyword passing shows.
        key = raw.key[len(self._prefix) :].decode()
        return KeyValue(key, raw.value, raw.create_revision, raw.mod_revision, raw.version, raw.lease)

    def _event(self, raw: Any) -> WatchEvent:
        if raw.type == rpc.Event.PUT:
            kv = self._record(raw.kv)
            before = self._record(raw.prev_kv) if raw.HasField("prev_kv") else None
            return WatchEvent("put", kv.key, kv, kv.mod_revision, before)
        key = raw.kv.key[len(self._prefix) :].decode()
        prev = self._record(raw.prev_kv) if raw.HasField("prev_kv") else None
        return WatchEvent("delete", key, prev, int(raw.kv.mod_revision))

    def _compare(self, message: Any, compare: Compare) -> None:
        message.key = self._key(compare.key)
        message.result = _COMPARE_RESULTS[compare.op]
        if compare.target == "value":
            message.target = rpc.Compare.VALUE
            message.value = compare.operand
        elif compare.target == "version":
            message.target = rpc.Compare.VERSION
            message.version = compare.operand
        else:
            message.target = rpc.Compare.MOD
            message.mod_revision = compare.operand

    def _request_op(self, message: Any, op: Op) -> None:
        key = self._key(op.key)
        if op.kind == "put":
            put = message.request_put
            put.key = key
            put.value = op.value
            if op.lease:
                put.lease = op.lease
        elif op.kind == "get":
            message.request_range.key = key
        elif op.kind in ("count", "range"):
            prefix = message.request_range
            prefix.key = key
            prefix.range_end = range_end(key)
            prefix.count_only = op.kind == "count"
        elif op.kind == "delete":
            message.request_delete_range.key = key
        else:
            prefix = message.request_delete_range
            prefix.key = key
            prefix.range_end = range_end(key)

    def _txn_response(self, op: Op, raw: Any) -> TxnResponse:
        kind = raw.WhichOneof("response")
        if op.kind == "count":
            return int(raw.response_range.count)
        if op.kind == "range":
            return [self._record(kv) for kv in raw.response_range.kvs]
        if kind == "response_range":
            kvs = raw.response_range.kvs
            return self._record(kvs[0]) if kvs else None
        if kind == "response_delete_range":
            return int(raw.response_delete_range.deleted)
        return None


def range_end(key: bytes) -> bytes:
    """The end of the range of keys starting with ``key``; b"\\0" means "to the end" to etcd."""
    for i in reversed(range(len(key))):
        if key[i] < 0xFF:
            return key[:i] + bytes([key[i] + 1])
    return b"\0"
