"""A request's token is resolved from the replica's copy of the tokens (``federation.watched``), not read
from the store per request (issue 33, point 6: a hundred agents report every second, and each report
paid a token read). What the copy must not do: accept a token revoked or removed through another
replica past the watch's delay, or keep serving after its watch ended. Both backends; no sleeps: each
wait is for the revocation's own revision to come through the watch."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from federation import keys
from federation.auth import Role, TokenRefused, TokenStore, digest
from federation.store import KeyValue, Op, Store, TxnResult
from policies.clock import ManualClock

START = 1_700_000_000.0


class CountedReads:
    """``store`` with its reads counted (a txn counts when it reads)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get(self, key: str) -> KeyValue | None:
        self.reads += 1
        return await self._store.get(key)

    async def range(self, prefix: str, *, limit: int = 0) -> list[KeyValue]:
        self.reads += 1
        return await self._store.range(prefix, limit=limit)

    async def txn(self, compares: Sequence[Any], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        self.reads += 1
        return await self._store.txn(compares, success, failure)


async def test_a_hundred_requests_resolve_their_token_without_a_store_read(store: Store) -> None:
    counted = CountedReads(store)
    tokens = TokenStore(counted, ManualClock(START))  # type: ignore[arg-type]
    try:
        agent = await tokens.issue(Role.CLUSTER, "c1")
        assert (await tokens.resolve(agent)).name == "c1"  # the copy is read once, here
        before = counted.reads
        for _ in range(100):
            assert (await tokens.resolve(agent)).name == "c1"
        reads = counted.reads - before
        print(f"store reads for 100 resolves of one token: {reads}")
        assert reads == 0, f"{reads} store reads for 100 resolves (before: one a resolve)"
    finally:
        await tokens.close()


async def test_a_token_revoked_or_removed_through_another_replica_is_refused_once_the_watch_brings_it(
    store: Store,
) -> None:
    clock = ManualClock(START)
    here, there = TokenStore(store, clock), TokenStore(store, clock)  # two replicas on one store
    try:
        revoked, removed = await there.issue(Role.TENANT, "alice"), await there.issue(Role.CLUSTER, "c1")
        assert (await here.resolve(revoked)).name == "alice"  # issued there, resolved here: a store read
        assert (await here.resolve(removed)).name == "c1"

        started = time.perf_counter()
        await there.revoke(digest(revoked)[:16], "leaked")
        await here.records.caught_up(await store.revision())
        with pytest.raises(TokenRefused, match="was revoked .*leaked"):
            await here.resolve(revoked)
        revoke_delay = time.perf_counter() - started

        started = time.perf_counter()
        assert await store.delete(keys.token(digest(removed)))  # as a prune, or a hand, removes it
        await here.records.caught_up(await store.revision())
        with pytest.raises(TokenRefused, match="unknown token"):
            await here.resolve(removed)
        remove_delay = time.perf_counter() - started
        print(
            f"refused through the other replica {revoke_delay:.4f} s after the revoke, "
            f"{remove_delay:.4f} s after the delete"
        )
    finally:
        await here.close()
        await there.close()


async def test_a_copy_whose_watch_ended_reads_the_tokens_again_before_it_answers(store: Store) -> None:
    clock = ManualClock(START)
    tokens = TokenStore(store, clock)
    try:
        made = await tokens.issue(Role.TENANT, "alice")
        assert (await tokens.resolve(made)).name == "alice"
        await tokens.records.close()  # the watch ends (a compaction, a refusal): nothing comes through it
        kv = await store.get(keys.token(digest(made)))
        assert kv is not None
        record = kv.value.replace(b'"revoked_at":null', f'"revoked_at":{START}'.encode())
        await store.put(kv.key, record)  # revoked behind its back
        with pytest.raises(TokenRefused, match="was revoked"):
            await tokens.resolve(made)
    finally:
        await tokens.close()
