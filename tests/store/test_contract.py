"""The store contract, run against MemoryStore and a real etcd alike."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from federation.store import (
    DEFAULT_MAX_TXN_OPS,
    CompactedError,
    Compare,
    EtcdStore,
    KeyValue,
    LeaseNotFound,
    MemoryStore,
    Op,
    Store,
    WatchEvent,
    count_many,
    get_many,
    put_many,
)

from .support import let_time_pass, take


async def test_put_get_track_revisions_and_versions(store: Store) -> None:
    first = await store.put("a", b"1")
    second = await store.put("a", b"2")
    kv = await store.get("a")

    assert second == first + 1
    assert kv is not None
    assert (kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version) == ("a", b"2", first, second, 2)
    assert await store.revision() == second


async def test_delete_reports_whether_it_deleted_and_only_then_bumps_revision(store: Store) -> None:
    await store.put("a", b"1")
    assert await store.delete("a") is True
    after_delete = await store.revision()

    assert await store.get("a") is None
    assert await store.delete("a") is False
    assert await store.revision() == after_delete


async def test_range_returns_only_the_prefix_in_key_order(store: Store) -> None:
    for key in ("q/b", "q/a", "qx", "p/a", "q/c"):
        await store.put(key, key.encode())

    assert [kv.key for kv in await store.range("q/")] == ["q/a", "q/b", "q/c"]
    assert [kv.value for kv in await store.range("q/", limit=2)] == [b"q/a", b"q/b"]
    assert [kv.key for kv in await store.range("")] == ["p/a", "q/a", "q/b", "q/c", "qx"]


async def test_range_larger_than_a_page_is_complete_and_ordered(store: Store, range_page_size: int) -> None:
    count = 2 * range_page_size + 57
    items = [(f"jobs/{i:05d}", f"job-{i}".encode()) for i in reversed(range(count))]
    await put_many(store, items)

    everything = await store.range("jobs/")
    some = await store.range("jobs/", limit=range_page_size + 30)

    assert [(kv.key, kv.value) for kv in everything] == sorted(items)
    assert [kv.key for kv in some] == [key for key, _ in sorted(items)[: range_page_size + 30]]


async def test_snapshot_carries_the_revision_it_was_read_at(store: Store) -> None:
    await store.put("s/1", b"x")
    snapshot = await store.snapshot("s/")
    later = await store.put("s/2", b"y")

    assert snapshot.revision == later - 1
    assert [kv.key for kv in snapshot.kvs] == ["s/1"]


async def test_pages_read_one_revision_whatever_is_written_between_them(store: Store, range_page_size: int) -> None:
    """A cold load applies each page as it comes (``SchedulerService._read``) while writes go on: every
    page must be read at the first page's revision, or the state would mix two moments."""
    count = 3 * range_page_size + 7
    items = [(f"p/{i:05d}", b"v0") for i in range(count)]
    await put_many(store, items)
    seen: list[KeyValue] = []
    revisions = set()
    async with aclosing(store.pages("p/")) as pages:
        async for page in pages:
            if not seen:  # between the first page and the rest: a change, a new key, a deletion
                await store.put(items[-1][0], b"v1")
                await store.put("p/99999", b"new")
                await store.delete(items[-2][0])
            seen += page.kvs
            revisions.add(page.revision)

    assert [(kv.key, kv.value) for kv in seen] == items
    assert len(revisions) == 1


async def test_leaving_pages_early_leaves_no_read_running(store: Store, range_page_size: int) -> None:
    await put_many(store, [(f"p/{i:05d}", b"v") for i in range(3 * range_page_size)])
    before = asyncio.all_tasks()
    async with aclosing(store.pages("p/")) as pages:
        async for page in pages:
            assert page.kvs
            break

    assert {task for task in asyncio.all_tasks() - before if not task.done()} == set()


async def test_cas_on_mod_revision_lets_exactly_one_racing_writer_win(store: Store, other_client: Store) -> None:
    revision = await store.put("job", b"pending")
    clients = [store, other_client] * 4

    async def attempt(i: int) -> tuple[int, bool, bytes | None]:
        result = await clients[i].txn(
            [Compare.mod_revision("job", "==", revision)], [Op.put("job", f"writer-{i}".encode())], [Op.get("job")]
        )
        seen = result.responses[0]
        return i, result.succeeded, seen.value if isinstance(seen, KeyValue) else None

    outcomes = await asyncio.gather(*(attempt(i) for i in range(len(clients))))
    winners = [i for i, succeeded, _ in outcomes if succeeded]
    final = await store.get("job")

    assert len(winners) == 1
    assert final is not None and final.value == f"writer-{winners[0]}".encode() and final.version == 2
    assert all(seen == final.value for _, succeeded, seen in outcomes if not succeeded)


async def test_compares_on_version_value_and_existence(store: Store) -> None:
    create = [Op.put("lock", b"me")]
    assert (await store.txn([Compare.missing("lock")], create)).succeeded
    assert not (await store.txn([Compare.missing("lock")], create)).succeeded
    assert (await store.txn([Compare.exists("lock"), Compare.version("lock", "==", 1)], [])).succeeded
    assert (await store.txn([Compare.value("lock", "==", b"me"), Compare.value("lock", ">", b"ma")], [])).succeeded
    assert not (await store.txn([Compare.value("lock", "<", b"me")], [])).succeeded
    assert not (await store.txn([Compare.exists("nothing")], [])).succeeded
    # etcd: a value compare on a missing key fails, whatever the operator.
    assert not (await store.txn([Compare.value("nothing", "!=", b"x")], [])).succeeded
    assert (await store.txn([Compare.mod_revision("nothing", "==", 0)], [])).succeeded


async def test_a_txn_counts_the_keys_under_prefixes_without_reading_them(store: Store) -> None:
    for key in ("view/a/1", "view/a/2", "view/ab/1", "view/b/1", "viewer"):
        await store.put(key, b"x")

    result = await store.txn(
        [Compare.exists("view/b/1")],
        [Op.count("view/a/"), Op.count("view/"), Op.count("view/c/"), Op.put("view/a/3", b"y"), Op.count("view/a/")],
        [Op.count("view/")],
    )
    failed = await store.txn([Compare.missing("view/b/1")], [], [Op.count("view/b/"), Op.count("view")])

    assert result.succeeded and result.responses == [2, 4, 0, None, 3]
    assert not failed.succeeded and failed.responses == [1, 6]


async def test_txn_runs_the_chosen_branch_atomically_at_one_revision(store: Store) -> None:
    await store.put("old/1", b"a")
    await store.put("old/2", b"b")
    await store.put("gone", b"c")
    before = await store.revision()

    result = await store.txn(
        [Compare.exists("gone")],
        [Op.put("new/1", b"x"), Op.put("new/2", b"y"), Op.get("new/1"), Op.delete("gone"), Op.delete_prefix("old/")],
        [Op.put("never", b"!")],
    )
    new1, new2 = await store.get("new/1"), await store.get("new/2")

    assert result.succeeded and result.revision == before + 1
    assert result.responses[:2] == [None, None]
    assert result.responses[2] == new1
    assert result.responses[3:] == [1, 2]
    assert new1 is not None and new2 is not None and new1.mod_revision == new2.mod_revision == result.revision
    assert await store.range("old/") == [] and await store.get("never") is None


async def test_failed_txn_runs_the_failure_branch(store: Store) -> None:
    result = await store.txn([Compare.exists("missing")], [Op.put("then", b"1")], [Op.put("else", b"1")])

    assert not result.succeeded
    assert await store.get("then") is None
    assert (await store.get("else")) is not None


async def test_txn_over_the_op_limit_is_refused_and_writes_nothing(store: Store) -> None:
    too_many = [Op.put(f"t/{i}", b"x") for i in range(DEFAULT_MAX_TXN_OPS + 1)]
    with pytest.raises(ValueError, match="max_txn_ops"):
        await store.txn([], too_many)
    assert await store.range("t/") == []

    result = await store.txn([], too_many[:-1])
    assert result.succeeded and len(await store.range("t/")) == DEFAULT_MAX_TXN_OPS


async def test_txn_writing_one_key_twice_is_refused(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.txn([], [Op.put("k", b"1"), Op.put("k", b"2")])
    with pytest.raises(ValueError):
        await store.txn([], [Op.put("d/k", b"1"), Op.delete_prefix("d/")])
    assert await store.get("k") is None and await store.get("d/k") is None


async def test_keepalive_holds_a_lease_past_its_ttl_and_then_it_expires(store: Store) -> None:
    ttl = 2.0
    lease = await store.grant(ttl)
    revision = await store.put("agent/a", b"alive", lease=lease)
    events = store.watch("agent/", start_revision=revision + 1)

    for _ in range(6):
        await let_time_pass(store, ttl / 4)
        await store.keepalive(lease)
    kept = await store.get("agent/a")
    await let_time_pass(store, ttl + 0.5)
    [expiry] = await take(events, 1)

    assert kept is not None and kept.lease == lease
    assert (expiry.type, expiry.key) == ("delete", "agent/a")
    assert await store.get("agent/a") is None
    with pytest.raises(LeaseNotFound):
        await store.keepalive(lease)


async def test_lease_expires_without_keepalive(store: Store) -> None:
    lease = await store.grant(2.0)
    revision = await store.put("agent/b", b"alive", lease=lease)
    events = store.watch("agent/", start_revision=revision + 1)

    await let_time_pass(store, 2.5)
    [expiry] = await take(events, 1)

    assert (expiry.type, expiry.key, expiry.revision) == ("delete", "agent/b", await store.revision())
    assert await store.get("agent/b") is None


async def test_revoke_deletes_attached_keys_in_one_revision(store: Store) -> None:
    lease = await store.grant(60)
    await store.put("leader", b"me", lease=lease)
    await store.put("member", b"me", lease=lease)
    start = await store.put("unleased", b"stays") + 1
    await store.put("detached", b"x", lease=lease)
    await store.put("detached", b"y")
    events = store.watch("", start_revision=start + 2)

    await store.revoke(lease)
    deletions = await take(events, 2)

    assert sorted(event.key for event in deletions) == ["leader", "member"]
    assert {event.type for event in deletions} == {"delete"} and deletions[0].revision == deletions[1].revision
    assert [kv.key for kv in await store.range("")] == ["detached", "unleased"]
    with pytest.raises(LeaseNotFound):
        await store.keepalive(lease)
    with pytest.raises(LeaseNotFound):
        await store.revoke(lease)
    with pytest.raises(LeaseNotFound):
        await store.put("late", b"x", lease=lease)


async def test_watch_from_a_revision_replays_exactly_what_followed(store: Store) -> None:
    await store.put("w/a", b"1")
    start = await store.put("w/b", b"1")
    await store.put("w/a", b"2")
    await store.put("other", b"ignored")
    await store.delete("w/b")
    txn = await store.txn([], [Op.put("w/c", b"1"), Op.put("w/d", b"1")])
    events = store.watch("w/", start_revision=start)

    replayed = await take(events, 5)
    sentinel = await store.put("w/sentinel", b"")
    [following] = await take(events, 1)

    assert [(e.type, e.key, e.revision) for e in replayed] == [
        ("put", "w/b", start),
        ("put", "w/a", start + 1),
        ("delete", "w/b", start + 3),
        ("put", "w/c", txn.revision),
        ("put", "w/d", txn.revision),
    ]
    a, deleted_b = replayed[1].kv, replayed[2].kv
    assert a is not None and (a.value, a.version) == (b"2", 2)
    assert deleted_b is not None and deleted_b.value == b"1"
    assert (following.key, following.revision) == ("w/sentinel", sentinel)


async def test_snapshot_over_a_key_range_reads_only_keys_inside_it(store: Store) -> None:
    for key in ("s/a", "s/b/x", "s/c", "s/ca", "s/d"):
        await store.put(key, b"1")

    snapshot = await store.snapshot("s/b", end="s/ca")

    assert [kv.key for kv in snapshot.kvs] == ["s/b/x", "s/c"]
    assert snapshot.revision == await store.revision()


async def test_snapshot_from_a_start_key_with_a_limit_reads_on_in_key_order(store: Store, range_page_size: int) -> None:
    """How the list API resumes: from just after the last key it read, up to a limit, across range pages."""
    keys = [f"v/a/{i:05d}" for i in range(2 * range_page_size + 57)]
    await put_many(store, [(key, b"1") for key in [*keys, "v/0", "v/b/1", "w/1"]])

    resumed = await store.snapshot(keys[10] + "\0", limit=range_page_size + 30, end="v/b")
    tail = await store.snapshot(keys[-3] + "\0", limit=range_page_size, end="v/b")

    assert [kv.key for kv in resumed.kvs] == keys[11 : 11 + range_page_size + 30]
    assert [kv.key for kv in tail.kvs] == keys[-2:]


async def test_a_snapshot_at_a_past_revision_reads_the_keys_as_they_stood_then(store: Store) -> None:
    """Several reads at one revision see the store as one (a listing page): later puts, overwrites and
    deletes are undone, keys outside the range stay out, and a limit counts the keys of then."""
    await put_many(store, [("p/a", b"1"), ("p/b", b"1"), ("p/c", b"1"), ("p/d", b"1")])
    then = await store.snapshot("p/")
    await store.put("p/b", b"2")  # overwritten twice: the oldest change says what it held
    await store.put("p/b", b"3")
    await store.delete("p/c")
    await store.put("p/bb", b"new")
    await store.put("p/c", b"again")  # deleted, then created anew
    await store.put("q/a", b"outside")

    past = await store.snapshot("p/", revision=then.revision)
    limited = await store.snapshot("p/a", end="p/d", limit=2, revision=then.revision)

    assert past.revision == then.revision
    assert [(kv.key, kv.value, kv.mod_revision) for kv in past.kvs] == [
        (kv.key, kv.value, kv.mod_revision) for kv in then.kvs
    ]
    assert [kv.key for kv in limited.kvs] == ["p/a", "p/b"]
    assert [kv.value for kv in (await store.snapshot("p/")).kvs] == [b"1", b"3", b"new", b"again", b"1"]
    await store.compact(await store.revision())
    with pytest.raises(CompactedError):
        await store.snapshot("p/", revision=then.revision)


async def test_watch_over_a_key_range_sees_only_keys_inside_it(store: Store) -> None:
    start = await store.revision() + 1
    for key in ("r/a", "r/b/x", "r/c", "r/d", "r/ca"):
        await store.put(key, b"1")
    await store.delete("r/b/x")
    events = store.watch("r/b", start_revision=start, end="r/ca", previous=False)

    replayed = await take(events, 3)

    assert [(e.type, e.key) for e in replayed] == [("put", "r/b/x"), ("put", "r/c"), ("delete", "r/b/x")]


async def test_watch_streams_live_changes(store: Store) -> None:
    events = store.watch("live/", start_revision=await store.revision() + 1)
    consumer = asyncio.create_task(take(events, 3))

    written = [await store.put(f"live/{i}", b"x") for i in range(3)]

    assert [e.revision for e in await consumer] == written


async def test_watch_resumes_after_losing_the_connection_without_loss_or_repeat(store: Store) -> None:
    events = store.watch("r/", start_revision=await store.revision() + 1)
    written = [await store.put(f"r/{i}", b"before") for i in range(3)]
    seen = await take(events, 2)

    await _lose_connection(store)
    written += [await store.put(f"r/{i}", b"after") for i in range(3, 6)]
    seen += await take(events, 4)

    assert [(e.key, e.revision) for e in seen] == [(f"r/{i}", rev) for i, rev in enumerate(written)]


async def _lose_connection(store: Store) -> None:
    if isinstance(store, EtcdStore):
        await store.reconnect()
    else:
        assert isinstance(store, MemoryStore)
        store.set_available(False)
        store.set_available(True)


async def test_watch_before_the_compaction_point_raises_compacted(store: Store) -> None:
    first = await store.put("c/1", b"x")
    middle = await store.put("c/2", b"x")
    await store.put("c/3", b"x")

    await store.compact(middle)
    with pytest.raises(CompactedError) as compacted:
        await take(store.watch("c/", start_revision=first), 1)
    kept: list[WatchEvent] = await take(store.watch("c/", start_revision=middle), 2)

    assert compacted.value.compact_revision == middle
    assert [e.key for e in kept] == ["c/2", "c/3"]
    await store.compact(first)  # already compacted: nothing to do
    with pytest.raises(ValueError):
        await store.compact(await store.revision() + 10)


async def test_defragmenting_a_member_gives_back_what_a_physical_compaction_freed(store: Store) -> None:
    """64 values of 64 KiB written, deleted and compacted away leave their 4 MiB in etcd's file as free
    pages (the memory store frees nothing it does not give back); defragmenting that member gives them
    back and keeps every live key. (etcd counts the pages free only at a later commit, up to 100 ms on,
    so ``free`` itself is not asserted here: tests/scheduler/test_defrag.py waits for it.)"""
    await put_many(store, [(f"d/{i}", b"x" * 65536) for i in range(64)])
    await store.put("d/kept", b"kept")
    await store.txn([], [Op.delete(f"d/{i}") for i in range(64)])
    await store.compact(await store.revision(), physical=True)
    [before] = await store.members()
    assert before.leader and before.size >= before.in_use > 0

    await store.defragment(before.member)

    [after] = await store.members()
    if isinstance(store, EtcdStore):
        assert after.size <= before.size - 64 * 65536
    else:
        assert before.free == after.free == 0
    assert (await store.get("d/kept")).value == b"kept"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="no .*member 'nowhere:1'"):
        await store.defragment("nowhere:1")


async def test_history_is_required_only_back_to_the_compaction_point(store: Store) -> None:
    first = await store.put("h/1", b"x")
    middle = await store.put("h/2", b"x")
    await store.compact(middle)

    with pytest.raises(CompactedError):
        await store.require_history(first)
    await store.require_history(middle)
    await store.require_history(await store.revision() + 5)  # not written yet: a watch waits for it
    with pytest.raises(ValueError):
        await store.require_history(0)


async def test_a_watched_put_carries_the_value_it_replaced(store: Store) -> None:
    start = await store.put("p/a", b"1")
    await store.put("p/a", b"2")
    await store.txn([], [Op.put("p/a", b"3"), Op.put("p/b", b"1")])

    events = await take(store.watch("p/", start_revision=start), 4)

    assert [(e.key, e.kv and e.kv.value, e.prev and e.prev.value) for e in events] == [
        ("p/a", b"1", None),
        ("p/a", b"2", b"1"),
        ("p/a", b"3", b"2"),
        ("p/b", b"1", None),
    ]


async def test_put_many_writes_everything_and_returns_the_last_revision(store: Store) -> None:
    items = [(f"bulk/{i:04d}", bytes(300)) for i in range(3 * DEFAULT_MAX_TXN_OPS + 5)]

    revision = await put_many(store, items, in_flight=3)

    assert revision == await store.revision()
    assert [kv.key for kv in await store.range("bulk/")] == [key for key, _ in items]


async def test_get_many_reads_every_key_in_order_with_none_for_missing_ones(store: Store) -> None:
    items = [(f"many/{i:04d}", f"value-{i}".encode()) for i in range(2 * DEFAULT_MAX_TXN_OPS + 7)]
    await put_many(store, items)
    keys = [key for key, _ in reversed(items)]
    keys.insert(DEFAULT_MAX_TXN_OPS, "many/missing")  # one txn's gets straddle a missing key

    found = await get_many(store, keys, in_flight=2)

    assert len(found) == len(keys)
    assert found[DEFAULT_MAX_TXN_OPS] is None
    rest = found[:DEFAULT_MAX_TXN_OPS] + found[DEFAULT_MAX_TXN_OPS + 1 :]
    assert [(kv.key, kv.value) for kv in rest if kv is not None] == list(reversed(items))
    assert await get_many(store, []) == []


async def test_count_many_counts_every_prefix_in_order_across_txns(store: Store) -> None:
    sizes = [(i * 7) % 5 for i in range(DEFAULT_MAX_TXN_OPS + 9)]  # more prefixes than one txn's ops
    await put_many(store, [(f"counted/{i:03d}/{n}", b"") for i, size in enumerate(sizes) for n in range(size)])

    counts = await count_many(store, [f"counted/{i:03d}/" for i in range(len(sizes))], in_flight=2)

    assert counts == sizes
    assert await count_many(store, ["counted/", "elsewhere/"]) == [sum(sizes), 0]
    assert await count_many(store, []) == []
