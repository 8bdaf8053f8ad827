"""Pick a store from one configuration value, so the server, scheduler and ``fedq up`` agree on it."""

from __future__ import annotations

from federation.store.base import DEFAULT_PREFIX, Store
from federation.store.connection import EtcdConnection
from federation.store.etcd import EtcdStore
from federation.store.memory import MemoryStore
from policies.clock import Clock


def open_store(target: str | EtcdConnection, *, prefix: str = DEFAULT_PREFIX, clock: Clock | None = None) -> Store:
    """``memory`` for the embedded store; an ``EtcdConnection``, or etcd URLs with their scheme
    (``https://a:2379,https://b:2379``, ``http://host:port``, ``etcd://host:port``)."""
    if target in ("memory", "memory://"):
        return MemoryStore(clock=clock)
    if isinstance(target, str):
        if "://" not in target:
            raise ValueError(f"unknown store {target!r}: use 'memory' or etcd URLs such as https://host:2379")
        target = EtcdConnection.parse(target)
    return EtcdStore(target, prefix=prefix)
