"""The production store: etcd v3 through one aetcd gRPC client per store.

aetcd manages the channel; requests go straight to its KV, Lease and Watch stubs because its helpers
cannot page a range (gRPC's 4 MiB receive limit breaks large prefixes) and its watcher does not
resume after a reconnect.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import aetcd
import grpc
import structlog
from aetcd import rpc

from federation.store.base import DEFAULT_MAX_TXN_OPS, DEFAULT_PREFIX, check_txn
from federation.store.errors import CompactedError, LeaseNotFound, StoreError, StoreFull, StoreUnavailable
from federation.store.types import Compare, KeyValue, Op, StoreSnapshot, TxnResponse, TxnResult, WatchEvent

log = structlog.get_logger(__name__)

DEFAULT_PAGE_SIZE = 5_000
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
_UNAVAILABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
_WATCH_RETRYABLE = _UNAVAILABLE | {grpc.StatusCode.INTERNAL}
_COMPARE_RESULTS = {
    "==": rpc.Compare.EQUAL,
    "!=": rpc.Compare.NOT_EQUAL,
    "<": rpc.Compare.LESS,
    ">": rpc.Compare.GREATER,
}
_RANGE_ATTEMPTS = 3
_WATCH_RETRY_MIN = 0.05
_WATCH_RETRY_MAX = 1.0


class EtcdStore:
    """A store over a real etcd; keys are kept under ``prefix``, callers use keys relative to it."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 2379,
        prefix: str = DEFAULT_PREFIX,
        max_txn_ops: int = DEFAULT_MAX_TXN_OPS,
        timeout: float | None = 10.0,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if endpoint is not None:
            host, port = parse_endpoint(endpoint)
        if not prefix:
            raise ValueError("the key prefix must not be empty (etcd has no empty key)")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.max_txn_ops = max_txn_ops
        self._prefix = prefix.encode()
        self._timeout = timeout
        self._page_size = page_size
        self._client = aetcd.Client(host=host, port=port, options=_CHANNEL_OPTIONS)
        self._closed = False

    async def get(self, key: str) -> KeyValue | None:
        kv = await self._kv_stub()
        with _mapped_errors():
            response = await kv.Range(rpc.RangeRequest(key=self._key(key)), timeout=self._timeout)
        return self._record(response.kvs[0]) if response.kvs else None

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]:
        return (await self.snapshot(prefix, limit=limit)).kvs

    async def snapshot(self, prefix: str, *, limit: int = 0, end: str | None = None) -> StoreSnapshot:
        """Read in pages at one revision; restart if a compaction overtakes the read."""
        attempt = 1
        while True:
            try:
                return await self._paged_range(prefix, limit, end)
            except CompactedError:
                if attempt >= _RANGE_ATTEMPTS:
                    raise
                attempt += 1

    async def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        kv = await self._kv_stub()
        request = rpc.PutRequest(key=self._key(key), value=value, lease=lease)
        with _mapped_errors():
            response = await kv.Put(request, timeout=self._timeout)
        return int(response.header.revision)

    async def delete(self, key: str) -> bool:
        kv = await self._kv_stub()
        with _mapped_errors():
            response = await kv.DeleteRange(rpc.DeleteRangeRequest(key=self._key(key)), timeout=self._timeout)
        return bool(response.deleted)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        check_txn(compares, success, failure, self.max_txn_ops)
        # Filled in place: a message built by keyword and then added is copied, 3-4x the cost per op.
        request = rpc.TxnRequest()
        for compare in compares:
            self._compare(request.compare.add(), compare)
        for ops, into in ((success, request.success), (failure, request.failure)):
            add = into.add
            for op in ops:
                self._request_op(add(), op)
        kv = await self._kv_stub()
        with _mapped_errors():
            response = await kv.Txn(request, timeout=self._timeout)
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
        kv = await self._kv_stub()
        with _mapped_errors():
            response = await kv.Range(rpc.RangeRequest(key=self._prefix, count_only=True), timeout=self._timeout)
        return int(response.header.revision)

    async def grant(self, ttl: float) -> int:
        """Grant a lease of ``ttl`` seconds rounded up; etcd itself raises very short TTLs to ~2 s."""
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive, got {ttl}")
        await self._connect()
        stub = self._client.leasestub
        with _mapped_errors():
            response = await stub.LeaseGrant(rpc.LeaseGrantRequest(TTL=math.ceil(ttl)), timeout=self._timeout)
        if response.error:
            raise StoreError(f"lease grant refused: {response.error}")
        return int(response.ID)

    async def keepalive(self, lease: int) -> None:
        await self._connect()
        call = self._client.leasestub.LeaseKeepAlive(timeout=self._timeout)
        try:
            with _mapped_errors():
                await call.write(rpc.LeaseKeepAliveRequest(ID=lease))
                response = await call.read()
        finally:
            call.cancel()
        if response is grpc.aio.EOF or response.TTL <= 0:
            raise LeaseNotFound(f"lease {lease} not found")

    async def revoke(self, lease: int) -> None:
        await self._connect()
        stub = self._client.leasestub
        with _mapped_errors():
            await stub.LeaseRevoke(rpc.LeaseRevokeRequest(ID=lease), timeout=self._timeout)

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
        range_end = _range_end(key) if end is None else self._key(end)
        next_revision = start_revision
        delay = _WATCH_RETRY_MIN
        while not self._closed:
            call: Any = None
            try:
                await self._connect()
                call = rpc.WatchStub(self._client.channel).Watch()
                create = rpc.WatchCreateRequest(
                    key=key, range_end=range_end, start_revision=next_revision or 0, prev_kv=previous
                )
                await call.write(rpc.WatchRequest(create_request=create))
                while True:
                    response = await call.read()
                    if response is grpc.aio.EOF:
                        break
                    if response.compact_revision:
                        raise CompactedError(int(response.compact_revision))
                    if response.canceled:
                        raise StoreError(f"etcd cancelled the watch: {response.cancel_reason}")
                    if response.created and next_revision is None:
                        next_revision = int(response.header.revision) + 1
                    delay = _WATCH_RETRY_MIN
                    for raw in response.events:
                        event = self._event(raw)
                        next_revision = event.revision + 1
                        yield event
            except grpc.aio.AioRpcError as error:
                if self._closed:
                    return
                if error.code() not in _WATCH_RETRYABLE:
                    raise _store_error(error) from error
                log.warning(
                    "etcd watch lost, resuming", prefix=prefix, next_revision=next_revision, error=error.code().name
                )
            except asyncio.CancelledError:
                if not _channel_closed_under_us():
                    raise
                if self._closed:
                    return
                log.warning("etcd channel closed under the watch, resuming", prefix=prefix, next_revision=next_revision)
            finally:
                if call is not None:
                    call.cancel()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _WATCH_RETRY_MAX)

    async def compact(self, revision: int) -> None:
        """Drop history before ``revision``; compacting at or below an earlier compaction is a no-op."""
        kv = await self._kv_stub()
        try:
            await kv.Compact(rpc.CompactionRequest(revision=revision), timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.OUT_OF_RANGE:
                raise _store_error(error) from error
            if "future revision" in (error.details() or ""):
                raise ValueError(f"cannot compact at {revision}: {error.details()}") from error

    async def reconnect(self) -> None:
        """Drop the gRPC channel and open a new one; watches resume on it. For fault injection."""
        await self._client.close()
        await self._connect()

    async def close(self) -> None:
        self._closed = True
        await self._client.close()

    async def _connect(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        with _mapped_errors():
            await self._client.connect()

    async def _kv_stub(self) -> Any:
        await self._connect()
        return self._client.kvstub

    async def _paged_range(self, prefix: str, limit: int, until: str | None) -> StoreSnapshot:
        kv = await self._kv_stub()
        start = self._key(prefix)
        end = _range_end(start) if until is None else self._key(until)
        revision = 0
        found: list[KeyValue] = []
        while True:
            page = self._page_size if not limit else min(self._page_size, limit - len(found))
            request = rpc.RangeRequest(key=start, range_end=end, limit=page, revision=revision)
            try:
                response = await kv.Range(request, timeout=self._timeout)
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in (error.details() or ""):
                    raise CompactedError(revision) from error
                raise _store_error(error) from error
            revision = revision or int(response.header.revision)
            found.extend(self._record(raw) for raw in response.kvs)
            if not response.more or not response.kvs or (limit and len(found) >= limit):
                return StoreSnapshot(revision, found)
            start = response.kvs[-1].key + b"\0"

    def _key(self, key: str) -> bytes:
        return self._prefix + key.encode()

    def _record(self, raw: Any) -> KeyValue:
        # Positional: this runs once per record of a large range, where keyword passing shows.
        key = raw.key[len(self._prefix) :].decode()
        return KeyValue(key, raw.value, raw.create_revision, raw.mod_revision, raw.version, raw.lease)

    def _event(self, raw: Any) -> WatchEvent:
        if raw.type == rpc.Event.PUT:
            kv = self._record(raw.kv)
            return WatchEvent("put", kv.key, kv, kv.mod_revision)
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
        elif op.kind == "count":
            count = message.request_range
            count.key = key
            count.range_end = _range_end(key)
            count.count_only = True
        elif op.kind == "delete":
            message.request_delete_range.key = key
        else:
            prefix = message.request_delete_range
            prefix.key = key
            prefix.range_end = _range_end(key)

    def _txn_response(self, op: Op, raw: Any) -> TxnResponse:
        kind = raw.WhichOneof("response")
        if op.kind == "count":
            return int(raw.response_range.count)
        if kind == "response_range":
            kvs = raw.response_range.kvs
            return self._record(kvs[0]) if kvs else None
        if kind == "response_delete_range":
            return int(raw.response_delete_range.deleted)
        return None


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """Accept ``http://host:port`` or ``host:port`` (etcd's own spelling of a client URL)."""
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if not parts.hostname:
        raise ValueError(f"etcd endpoint {endpoint!r} has no host")
    return parts.hostname, parts.port or 2379


def _range_end(key: bytes) -> bytes:
    """The end of the range of keys starting with ``key``; b"\\0" means "to the end" to etcd."""
    for i in reversed(range(len(key))):
        if key[i] < 0xFF:
            return key[:i] + bytes([key[i] + 1])
    return b"\0"


@contextmanager
def _mapped_errors() -> Iterator[None]:
    try:
        yield
    except grpc.aio.AioRpcError as error:
        raise _store_error(error) from error
    except asyncio.CancelledError as error:
        if not _channel_closed_under_us():
            raise
        raise StoreUnavailable("the etcd channel was closed during the call") from error
    except aetcd.ClientError as error:
        raise StoreError(str(error)) from error


def _channel_closed_under_us() -> bool:
    """grpc.aio raises CancelledError when the channel closes; tell that from this task being cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0


def _store_error(error: grpc.aio.AioRpcError) -> Exception:
    code = error.code()
    details = error.details() or code.name
    if code in _UNAVAILABLE:
        return StoreUnavailable(details)
    if code == grpc.StatusCode.NOT_FOUND and "lease not found" in details:
        return LeaseNotFound(details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "space exceeded" in details:
        return StoreFull(details)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return ValueError(f"etcd rejected the request: {details}")
    return StoreError(f"{code.name}: {details}")
