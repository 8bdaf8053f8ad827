"""The store: etcd v3 semantics (revisions, txns, leases, resumable watches) over etcd or in memory."""

from federation.store.base import DEFAULT_MAX_TXN_OPS, DEFAULT_PREFIX, Store, check_txn
from federation.store.bulk import count_many, get_many, put_many
from federation.store.connection import Endpoint, EtcdConnection
from federation.store.errors import (
    CompactedError,
    LeaseNotFound,
    PermissionDenied,
    RequestTooLarge,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from federation.store.etcd import EtcdStore
from federation.store.etcd_server import EtcdCluster, EtcdServer, EtcdServerError
from federation.store.factory import open_store
from federation.store.memory import MemoryStore
from federation.store.types import Compare, KeyValue, MemberSpace, Op, StoreSnapshot, TxnResult, WatchEvent

__all__ = [
    "DEFAULT_MAX_TXN_OPS",
    "DEFAULT_PREFIX",
    "CompactedError",
    "Compare",
    "Endpoint",
    "EtcdCluster",
    "EtcdConnection",
    "EtcdServer",
    "EtcdServerError",
    "EtcdStore",
    "KeyValue",
    "LeaseNotFound",
    "MemberSpace",
    "MemoryStore",
    "Op",
    "PermissionDenied",
    "RequestTooLarge",
    "StoreSnapshot",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
    "TxnResult",
    "WatchEvent",
    "check_txn",
    "count_many",
    "get_many",
    "open_store",
    "put_many",
]
