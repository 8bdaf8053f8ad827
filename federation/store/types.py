"""Values that cross the store interface: records, txn compares and ops, results, watch events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CompareOp = Literal["==", "!=", "<", ">"]
CompareTarget = Literal["mod_revision", "version", "value"]
OpKind = Literal["put", "delete", "delete_prefix", "get", "count", "range"]


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key at one revision, with etcd's bookkeeping (key relative to the store prefix)."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Compare:
    """A txn guard; a missing key has version 0 and mod_revision 0, and fails every value compare."""

    key: str
    target: CompareTarget
    op: CompareOp
    operand: int | bytes

    @staticmethod
    def mod_revision(key: str, op: CompareOp, revision: int) -> Compare:
        return Compare(key, "mod_revision", op, revision)

    @staticmethod
    def version(key: str, op: CompareOp, version: int) -> Compare:
        return Compare(key, "version", op, version)

    @staticmethod
    def value(key: str, op: CompareOp, value: bytes) -> Compare:
        return Compare(key, "value", op, value)

    @staticmethod
    def exists(key: str) -> Compare:
        return Compare(key, "version", ">", 0)

    @staticmethod
    def missing(key: str) -> Compare:
        return Compare(key, "version", "==", 0)


@dataclass(frozen=True, slots=True)
class Op:
    """One txn operation; ``delete_prefix``, ``count`` and ``range`` take a key prefix in ``key``."""

    kind: OpKind
    key: str
    value: bytes = b""
    lease: int = 0

    @staticmethod
    def put(key: str, value: bytes, lease: int = 0) -> Op:
        return Op("put", key, value, lease)

    @staticmethod
    def delete(key: str) -> Op:
        return Op("delete", key)

    @staticmethod
    def delete_prefix(prefix: str) -> Op:
        return Op("delete_prefix", prefix)

    @staticmethod
    def get(key: str) -> Op:
        return Op("get", key)

    @staticmethod
    def count(prefix: str) -> Op:
        """How many keys start with ``prefix``, counted by the store without reading them."""
        return Op("count", prefix)

    @staticmethod
    def range(prefix: str) -> Op:
        """Every key under ``prefix``, in one answer (unpaged: for prefixes known to stay small, read with
        other keys at one revision and in one request)."""
        return Op("range", prefix)


TxnResponse = KeyValue | list[KeyValue] | int | None


@dataclass(slots=True)
class TxnResult:
    """Per op of the branch that ran: get -> KeyValue | None, put -> None, delete -> count deleted,
    count -> how many keys."""

    succeeded: bool
    revision: int
    responses: list[TxnResponse] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """A range read at one revision, so a caller can watch from ``revision + 1`` without a gap."""

    revision: int
    kvs: list[KeyValue]


@dataclass(frozen=True, slots=True)
class MemberSpace:
    """One store member's database: its file's size (what etcd's quota counts) and the part of it in use;
    the rest is pages compaction freed, which only defragmenting that member gives back."""

    member: str
    size: int
    in_use: int
    leader: bool

    @property
    def free(self) -> int:
        return max(0, self.size - self.in_use)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A change; ``kv`` is the new record for a put and the previous one (if known) for a delete.
    ``prev`` is a put's previous record, when the key existed and the watch asked for previous values
    (a follower that diffs a record, such as a job's history, needs no read of its own)."""

    type: Literal["put", "delete"]
    key: str
    kv: KeyValue | None
    revision: int
    prev: KeyValue | None = None
