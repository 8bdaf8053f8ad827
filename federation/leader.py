"""Leader election on an etcd lease: one scheduler at a time, and a fence for every dispatch.

The leader key holds the candidate's unique identity and is attached to its lease. A dispatch txn
carries ``fence()`` (leader key value == my identity), so a deposed leader whose lease has run out
cannot dispatch even if it has not noticed yet. The lease is renewed from a thread of its own
(``federation/lease_keeper.py``) where the store allows it, so no stretch of work on the leader's event
loop lets it lapse; each turn's ``renew`` still checks that the key is ours.
"""

from __future__ import annotations

import uuid

import structlog

from federation import keys
from federation.lease_keeper import LeaseKeeper, Reopenable
from federation.store import Compare, LeaseNotFound, Op, Store, StoreError

log = structlog.get_logger("fedq.leader")


class LeaderElection:
    def __init__(self, store: Store, *, ttl: float = 5.0, identity: str | None = None) -> None:
        self.store = store
        self.ttl = ttl
        self.identity = identity or uuid.uuid4().hex
        self._lease: int | None = None
        self._keeper: LeaseKeeper | None = None

    @property
    def is_leader(self) -> bool:
        return self._lease is not None

    def fence(self) -> Compare:
        return Compare.value(keys.LEADER, "==", self.identity.encode())

    async def try_acquire(self) -> bool:
        """Become leader if nobody is; keep leadership if already held. Returns whether we lead."""
        if self._lease is not None:
            return await self.renew()
        lease = await self.store.grant(self.ttl)
        result = await self.store.txn(
            [Compare.missing(keys.LEADER)], [Op.put(keys.LEADER, self.identity.encode(), lease=lease)], []
        )
        if not result.succeeded:
            await self._revoke_quietly(lease)
            return False
        self._lease = lease
        if isinstance(self.store, Reopenable):
            self._keeper = LeaseKeeper(self.store, lease, self.ttl)
            self._keeper.start()
        log.info("became leader", identity=self.identity)
        return True

    async def renew(self) -> bool:
        """Keep the lease alive (its keeper does, where there is one); False (and no longer leader) if it has
        expired meanwhile or the key is no longer ours."""
        if self._lease is None:
            return False
        try:
            if self._keeper is None:
                await self.store.keepalive(self._lease)
            elif self._keeper.lost:
                raise LeaseNotFound("the lease keeper found the lease gone")
            holder = await self.store.get(keys.LEADER)
        except LeaseNotFound:
            holder = None
        except StoreError as exc:
            if self._keeper is not None:  # it renews on its own connection; every dispatch carries the fence
                log.warning("checking the leader's lease failed; its keeper holds it", error=str(exc))
                return True
            holder = None
        if holder is None or holder.value != self.identity.encode():
            log.warning("lost leadership", identity=self.identity)
            self._lease = None
            await self._stop_keeper()
            return False
        return True

    async def resign(self) -> None:
        await self._stop_keeper()
        if self._lease is not None:
            await self._revoke_quietly(self._lease)
            self._lease = None

    async def abandon(self) -> None:
        """Stop renewing without handing over, as a killed process does: the lease runs out in etcd (for
        the takeover bench, which kills a leader in its own process)."""
        await self._stop_keeper()
        self._lease = None

    async def _stop_keeper(self) -> None:
        if self._keeper is not None:
            keeper, self._keeper = self._keeper, None
            await keeper.stop()

    async def _revoke_quietly(self, lease: int) -> None:
        try:
            await self.store.revoke(lease)
        except (LeaseNotFound, StoreError):
            pass
