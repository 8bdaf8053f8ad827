"""The store contract every backend meets, and the txn checks both backends apply the same way."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Protocol

from federation.store.errors import RequestTooLarge
from federation.store.types import Compare, KeyValue, MemberSpace, Op, StoreSnapshot, TxnResult, WatchEvent

DEFAULT_PREFIX = "/fedq/"
DEFAULT_MAX_TXN_OPS = 128
MAX_REQUEST_BYTES = 3 * 512 * 1024
"""etcd's default ``--max-request-bytes``, which the federation's etcd keeps: a txn over it is refused
whole (as are its gRPC messages over it plus 512 KiB: "received message larger than max")."""


class Store(Protocol):
    """etcd v3 semantics over keys relative to the store's prefix.

    Revisions are global and grow by one per write (a txn's writes share one). A watch without
    ``start_revision`` begins when iteration begins; pass ``start_revision`` (e.g. a snapshot's
    revision + 1) to miss nothing.
    """

    max_txn_ops: int

    async def get(self, key: str) -> KeyValue | None: ...

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]: ...

    async def snapshot(
        self, prefix: str, *, limit: int = 0, end: str | None = None, revision: int = 0
    ) -> StoreSnapshot:
        """Keys under ``prefix`` (with ``end``: from ``prefix`` up to, not including, ``end``) at one revision:
        the latest, or ``revision`` (then ``CompactedError`` if history no longer reaches back to it), so
        several reads can see the store as one."""
        ...

    def pages(self, prefix: str, *, end: str | None = None) -> AsyncGenerator[StoreSnapshot, None]:
        """``snapshot``'s keys in pages at one revision, for a caller that works on each as it comes."""
        ...

    async def put(self, key: str, value: bytes, *, lease: int = 0) -> int: ...

    async def delete(self, key: str) -> bool: ...

    async def txn(
        self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult: ...

    async def revision(self) -> int: ...

    async def grant(self, ttl: float) -> int: ...

    async def keepalive(self, lease: int) -> None: ...

    async def revoke(self, lease: int) -> None: ...

    def watch(
        self, prefix: str, *, start_revision: int | None = None, end: str | None = None, previous: bool = True
    ) -> AsyncGenerator[WatchEvent, None]:
        """Changes to keys under ``prefix`` (with ``end``: keys from ``prefix`` up to, not including, ``end``).

        ``previous=False`` lets a store leave out a deleted key's last value (``WatchEvent.kv`` is then
        None for deletes): a follower that needs only the key saves etcd sending every old value."""
        ...

    async def require_history(self, revision: int) -> None:
        """Raise ``CompactedError`` if a watch from ``revision`` could not replay every change since:
        what a resumed stream checks before it answers, so a client hears 410 rather than a cut stream."""
        ...

    async def size(self) -> int:
        """The bytes the store holds as its quota counts them (etcd: its database file, history and
        free pages included, which only compaction and defragmentation give back)."""
        ...

    async def compact(self, revision: int, *, physical: bool = False) -> None:
        """Drop history before ``revision``; ``physical`` returns only once it has left the database file
        (its pages are free then), which a caller measuring space needs and the leader's upkeep does not."""
        ...

    async def members(self) -> list[MemberSpace]:
        """Each member's database size and use, for the members that answer (any user may ask)."""
        ...

    async def defragment(self, member: str) -> None:
        """Give ``member``'s free pages back (it answers nothing meanwhile); etcd allows this to its root
        role only and raises ``PermissionDenied`` for any other user."""
        ...

    async def close(self) -> None: ...


def payload_bytes(ops: Sequence[Op]) -> int:
    """What ops carry to etcd, keys and values: the measure every txn's size is bounded by."""
    return sum(len(op.key) + len(op.value) for op in ops)


def check_txn(compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op], max_ops: int) -> None:
    """Reject what etcd rejects before sending it, so both backends fail alike and early."""
    for name, items in (("compares", compares), ("success ops", success), ("failure ops", failure)):
        if len(items) > max_ops:
            raise ValueError(f"txn has {len(items)} {name}; the limit is {max_ops} (max_txn_ops)")
    for ops in (success, failure):
        _check_overlaps(ops)
        size = payload_bytes(ops)
        if size > MAX_REQUEST_BYTES:
            raise RequestTooLarge(f"txn carries {size} bytes; etcd takes at most {MAX_REQUEST_BYTES} a request")


def _check_overlaps(ops: Sequence[Op]) -> None:
    """etcd refuses a branch that writes one key twice (two puts, or a put inside a delete)."""
    puts: set[str] = set()
    for op in ops:
        if op.kind == "put":
            if op.key in puts:
                raise ValueError(f"txn puts key {op.key!r} twice")
            puts.add(op.key)
    for op in ops:
        if op.kind == "delete" and op.key in puts:
            raise ValueError(f"txn both puts and deletes key {op.key!r}")
        if op.kind == "delete_prefix" and any(key.startswith(op.key) for key in puts):
            raise ValueError(f"txn puts a key under the prefix {op.key!r} it deletes")
