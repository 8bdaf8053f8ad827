"""The leader gives etcd's freed pages back: it defragments members whose files are mostly free space.

Compaction and the removal of finished jobs free pages inside etcd's database file, but the file does
not shrink, and etcd's quota (its NOSPACE alarm, which stops every write) and ``store.budgetBytes``
count the file. Only defragmenting a member rewrites it without the free pages. Every
``store.defragEvery`` the leader reads each member's size and use; a member with ``store.defragAbove``
free (etcd-defrag's default rule, ahrtr/etcd-defrag), or with any free once it is past
``store.budgetBytes``, is defragmented: one member at a time, followers before the leader, as etcd's
maintenance guide advises, since a member answers nothing while it rewrites its file. The pass runs in
a task of its own so the cycle does not wait on it.

etcd allows defragmentation to its root role only: the connection's maintenance certificate
(``fedq server --etcd-maintenance-cert``) is such a user; without one, under etcd auth, etcd refuses
and the leader says so, once a period, naming the flag and the operator's ``etcdctl defrag``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import perf_counter

import structlog

from federation.config import StoreUpkeepConfig
from federation.store import MemberSpace, PermissionDenied, Store, StoreError
from policies.clock import Clock

log = structlog.get_logger("fedq.defrag")


def to_defragment(members: list[MemberSpace], config: StoreUpkeepConfig) -> list[MemberSpace]:
    """The members worth defragmenting, in the order to do them (followers first, the leader last)."""
    chosen = [
        member
        for member in members
        if member.free >= config.defrag_above or (member.size >= config.budget_bytes and member.free > 0)
    ]
    return sorted(chosen, key=lambda member: member.leader)


class Defragmenter:
    def __init__(
        self, store: Store, config: StoreUpkeepConfig, clock: Clock, done: Callable[[], None] | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self._done = done  # called once per member defragmented (the scheduler's metrics count them)
        self._checked_at = float("-inf")
        self._pass: asyncio.Task[list[str]] | None = None

    def start_if_due(self) -> None:
        """Start a pass when a period has gone by since the last one began and none is running."""
        now = self.clock.now()
        if (self._pass is not None and not self._pass.done()) or now - self._checked_at < self.config.defrag_every:
            return
        self._checked_at = now
        self._pass = asyncio.create_task(self.run_pass(), name="fedq-defragment")

    async def finished(self) -> list[str]:
        """The members the latest pass defragmented, once it is over ([] when none ran)."""
        return await self._pass if self._pass is not None else []

    async def close(self) -> None:
        """Stop waiting on a pass (a member already rewriting its file finishes on its own)."""
        if self._pass is not None and not self._pass.done():
            self._pass.cancel()
            await asyncio.gather(self._pass, return_exceptions=True)

    async def run_pass(self) -> list[str]:
        """Defragment what ``to_defragment`` picks; a member that fails is logged and the next one tried."""
        try:
            members = to_defragment(await self.store.members(), self.config)
        except StoreError as error:
            log.warning("could not read the store members' sizes; no defragmentation this period", error=str(error))
            return []
        done: list[str] = []
        for member in members:
            started = perf_counter()
            try:
                await self.store.defragment(member.member)
            except PermissionDenied as error:
                log.warning(
                    "etcd refused to defragment: only its root role may. Give the server "
                    "--etcd-maintenance-cert/--etcd-maintenance-key of a root user, or run "
                    "`etcdctl defrag` as root",
                    member=member.member,
                    free_bytes=member.free,
                    error=str(error),
                )
                return done
            except StoreError as error:
                log.warning("defragmentation failed", member=member.member, error=str(error))
                continue
            log.info(
                "etcd member defragmented",
                member=member.member,
                size_before=member.size,
                freed_at_most=member.free,
                seconds=round(perf_counter() - started, 3),
            )
            done.append(member.member)
            if self._done is not None:
                self._done()
        return done
