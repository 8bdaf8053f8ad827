"""Pick a store from one configuration string, so the server, scheduler and ``fedq up`` agree on it."""

from __future__ import annotations

from federation.store.base import DEFAULT_PREFIX, Store
from federation.store.etcd import EtcdStore
from federation.store.memory import MemoryStore
from policies.clock import Clock


def open_store(url: str, *, prefix: str = DEFAULT_PREFIX, clock: Clock | None = None) -> Store:
    """``memory`` (or ``memory://``) for the embedded store; ``etcd://host:port`` or ``http://host:port``."""
    if url in ("memory", "memory://"):
        return MemoryStore(clock=clock)
    scheme, sep, address = url.partition("://")
    if sep and scheme in ("etcd", "http"):
        return EtcdStore(address, prefix=prefix)
    raise ValueError(f"unknown store {url!r}: use 'memory' or 'etcd://host:port'")
