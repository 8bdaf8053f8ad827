"""Failover between the members of a real three-member etcd: what moves to the next member, and what
is never sent twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import grpc
import pytest

from federation.store import Endpoint, EtcdCluster, EtcdStore, StoreError, StoreUnavailable, WatchEvent
from federation.store.etcd_rpc import EtcdChannels, Link
from federation.store.etcd_server import EtcdServerError

from .support import take

pytestmark = pytest.mark.etcd


async def test_after_its_member_dies_reads_and_writes_go_to_the_next_one(etcd_cluster: EtcdCluster) -> None:
    store = EtcdStore(etcd_cluster.connection, timeout=5.0)
    first = await store.put("k", b"1")

    etcd_cluster.stop_member(0)  # the member the store is connected to
    read = await store.get("k")  # sent again on the next member
    second = await store.put("k", b"2")  # goes where the read went

    other = EtcdStore(etcd_cluster.member_connection(2))
    latest = await other.get("k")
    assert read is not None and read.mod_revision == first
    assert latest is not None and (latest.value, latest.mod_revision) == (b"2", second)
    await store.close()
    await other.close()


class LosesFirstAnswer:
    """A call whose first sending fails UNAVAILABLE after it went out, as when a member dies mid-call."""

    def __init__(self) -> None:
        self.sent_to: list[Endpoint] = []

    async def __call__(self, link: Link) -> Endpoint:
        self.sent_to.append(link.endpoint)
        if len(self.sent_to) == 1:
            raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "lost")
        return link.endpoint


async def test_a_write_whose_answer_is_lost_is_not_sent_again_but_a_read_is(etcd_cluster: EtcdCluster) -> None:
    channels = EtcdChannels(etcd_cluster.connection, options={}, timeout=5.0)
    a, b, c = etcd_cluster.connection.endpoints

    write = LosesFirstAnswer()
    with pytest.raises(grpc.aio.AioRpcError):
        await channels.call(write, retry=False)
    assert write.sent_to == [a] and channels.current == b  # raised; the next call goes to the next member

    read = LosesFirstAnswer()
    answered = await channels.call(read, retry=True)
    assert read.sent_to == [b, c] and answered == c
    await channels.close()


async def led_again(cluster: EtcdCluster, within: float = 15.0) -> None:
    """Until the running members agree on a leader again (etcd announces no election's end)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        try:
            await asyncio.to_thread(cluster.leader)
            return
        except EtcdServerError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_a_watch_resumes_on_another_member_without_loss_or_repeat(etcd_cluster: EtcdCluster) -> None:
    watcher = EtcdStore(etcd_cluster.connection)
    writer = EtcdStore(etcd_cluster.member_connection(1, 2))
    events = watcher.watch("jobs/", start_revision=await writer.revision() + 1)
    written = [await writer.put(f"jobs/{i}", b"before") for i in range(3)]
    seen: list[WatchEvent] = await take(events, 3)

    etcd_cluster.stop_member(0)  # the watcher's member, perhaps the leader
    await led_again(etcd_cluster)  # a write sent during an election may be dropped, and is not resent
    written += [await writer.put(f"jobs/{i}", b"after") for i in range(3, 6)]
    seen += await take(events, 3)

    assert [(e.key, e.revision) for e in seen] == [(f"jobs/{i}", rev) for i, rev in enumerate(written)]
    await events.aclose()
    await watcher.close()
    await writer.close()


async def test_a_lease_is_kept_alive_through_its_members_death(etcd_cluster: EtcdCluster) -> None:
    store = EtcdStore(etcd_cluster.connection, timeout=5.0)
    lease = await store.grant(2)
    await store.put("held", b"x", lease=lease)

    etcd_cluster.stop_member(0)
    for _ in range(3):  # past the TTL, renewed on the next member
        await store.keepalive(lease)
        await asyncio.sleep(1)

    assert await store.get("held") is not None
    await store.close()


async def test_with_no_member_left_calls_fail_as_unavailable(etcd_cluster: EtcdCluster) -> None:
    store = EtcdStore(etcd_cluster.connection, timeout=2.0, connect_timeout=0.2)
    await store.put("k", b"1")

    etcd_cluster.stop()
    calls: list[Any] = [store.get("k"), store.put("k", b"2"), store.txn([], [])]
    for call in calls:
        with pytest.raises(StoreUnavailable):
            await call
    await store.close()


async def test_a_write_while_etcd_moves_its_leader_fails_as_unavailable_if_at_all(etcd_cluster: EtcdCluster) -> None:
    """While its leadership moves (``etcdctl move-leader``), etcd's leader drops the proposals it is sent
    (raft's ErrProposalDropped, passed on as UNKNOWN): such a write failed as an unknown store error, a 500
    at the API. Nothing was applied; it fails as unavailable, which callers retry (a 503)."""
    store = EtcdStore(etcd_cluster.connection, timeout=2.0)
    loop = asyncio.get_running_loop()
    outcomes: Counter[str] = Counter()
    for _ in range(10):
        to = next(i for i in range(len(etcd_cluster.members)) if i != etcd_cluster.leader())
        moving = loop.run_in_executor(None, etcd_cluster.move_leader, to)
        while not moving.done():  # writes go to the leader (member 0 until it fails) as it hands over
            try:
                await store.put("k", b"v")
                outcomes["landed"] += 1
            except StoreError as error:
                outcomes[f"{type(error).__name__}: {error}"] += 1
        await moving
    await store.close()
    print(f"\nwrites while the leader moved 10 times: {dict(outcomes)}")
    assert outcomes["landed"]
    assert all(outcome == "landed" or outcome.startswith("StoreUnavailable") for outcome in outcomes), outcomes
