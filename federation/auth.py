"""Bearer tokens: admin, metrics, tenant, cluster and one-time cluster join tokens, stored only as digests.

A token is ``fedq_<kind>_<random>``; the store keeps ``sha256(token)`` → whom it names, when it was
made, when it expires and whether it was revoked, so a leaked store dump grants nothing and a refused
token is told why. A token's id, the digest's first 16 hex digits, names it in listings, revokes and
the audit log without revealing it.

The admin token the server starts with (``FEDQ_ADMIN_TOKEN``) is a bootstrap: recorded like any other
token at its first use, it expires and can be revoked, and a revoked or expired one stays refused
whatever the environment says. An admin rotates it with ``fedq token create --admin`` and a revoke.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from federation import keys
from federation.config import DAY, DEFAULT_TOKEN_TTL
from federation.models.cluster import ClusterGrant
from federation.store import DEFAULT_MAX_TXN_OPS, Compare, KeyValue, Op, Store
from federation.watched import WatchedPrefix
from policies.clock import Clock
from policies.format import format_time

ID_LENGTH = 16
_ID = re.compile(f"[0-9a-f]{{{ID_LENGTH}}}")
KEEP_ENDED = 30 * DAY
"""How long an expired or revoked token's record stays (so its refusal says why) before an issue prunes it."""


class Role(StrEnum):
    ADMIN = "admin"
    METRICS = "metrics"
    TENANT = "tenant"
    CLUSTER = "cluster"
    JOIN = "join"


@dataclass(frozen=True)
class Principal:
    """Who a request is from; ``token_id`` names the token in the audit log."""

    role: Role
    name: str
    token_id: str

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    @property
    def display(self) -> str:
        """``role/name``, as the audit log and a job's history (who holds it) name the caller."""
        return f"{self.role.value}/{self.name}"


class TokenRecord(BaseModel):
    """What the store keeps under a token's digest (records from before expiry existed lack the times)."""

    model_config = ConfigDict(extra="ignore")

    role: Role
    name: str
    created_at: float | None = None
    expires_at: float | None = None
    revoked_at: float | None = None
    revoked_because: str | None = None
    bootstrap: bool = False
    """The server's FEDQ_ADMIN_TOKEN: never pruned, so a revoked or expired one cannot come back."""
    grant: ClusterGrant | None = None
    """A join token's bounds on the cluster's labels and claimed capacity."""

    def ended(self, now: float) -> float | None:
        """When the token stopped working (revoked or expired), if it has."""
        if self.revoked_at is not None:
            return self.revoked_at
        if self.expires_at is not None and now >= self.expires_at:
            return self.expires_at
        return None

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


@dataclass(frozen=True)
class TokenInfo:
    id: str
    record: TokenRecord


class TokenRefused(Exception):
    """The bearer token grants nothing; the message says why and what to do."""


class UnknownToken(KeyError):
    pass


def new_token(role: Role) -> str:
    return f"fedq_{role.value}_{secrets.token_urlsafe(24)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def id_of(token: str) -> str:
    return digest(token)[:ID_LENGTH]


def _renewal(record: TokenRecord) -> str:
    """What the holder of a refused token does next."""
    if record.role is Role.TENANT:
        return f"ask an admin for a new one (`fedq token create --tenant {record.name}`)"
    if record.role in (Role.CLUSTER, Role.JOIN):
        return f"join cluster {record.name} again with a new join token (`fedq token create --cluster {record.name}`)"
    if record.bootstrap:
        return "use another admin token, or restart the server with a new FEDQ_ADMIN_TOKEN"
    return f"ask an admin for a new one (`fedq token create --{record.role.value}`)"


class TokenStore:
    """Issues, resolves, lists and revokes tokens; ``bootstrap_admin`` is the server's FEDQ_ADMIN_TOKEN.

    Every request resolves a token, so the records are resolved from a copy the replica keeps by a watch
    (``WatchedPrefix``), not read from the store each time. A revoke through this replica holds here
    once it returns, and through any other replica within the watch's delay."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        bootstrap_admin: str | None = None,
        *,
        bootstrap_ttl: float = DEFAULT_TOKEN_TTL,
    ) -> None:
        self._store = store
        self._clock = clock
        self._bootstrap = None if bootstrap_admin is None else digest(bootstrap_admin)
        self._bootstrap_ttl = bootstrap_ttl
        self.records = WatchedPrefix(store, keys.TOKENS, TokenRecord.model_validate_json)
        """The replica's copy of every token's record, by digest."""

    async def issue(
        self, role: Role, name: str, *, expires_at: float | None = None, grant: ClusterGrant | None = None
    ) -> str:
        """A new token (``expires_at`` None: until revoked); records that ended long ago are pruned."""
        token = new_token(role)
        now = self._clock.now()
        record = TokenRecord(role=role, name=name, created_at=now, expires_at=expires_at, grant=grant)
        stale = [kv.key for kv in await self._store.range(keys.TOKENS) if _prunable(_record(kv), now)]
        ops = [Op.put(keys.token(digest(token)), record.to_bytes())]
        ops += [Op.delete(key) for key in stale[: DEFAULT_MAX_TXN_OPS - 1]]  # the rest at later issues
        await self._store.txn([], ops, [])
        return token

    async def resolve(self, token: str) -> Principal:
        """Who the token names; TokenRefused when it is unknown, expired or revoked."""
        token_digest = digest(token)
        record = await self.records.get(token_digest)
        if record is None:  # unknown, or issued through another replica a moment ago
            kv = await self._store.get(keys.token(token_digest))
            record = await self._bootstrapped(token_digest) if kv is None else _record(kv)
        if record is None:
            raise TokenRefused("unknown token: check --token or FEDQ_TOKEN, or ask an admin for a token")
        tid = token_digest[:ID_LENGTH]
        ended = record.ended(self._clock.now())
        if ended is not None:
            how = "expired" if record.revoked_at is None else "was revoked"
            because = f" ({record.revoked_because})" if record.revoked_because else ""
            raise TokenRefused(f"token {tid} {how} at {format_time(ended)}{because}: {_renewal(record)}")
        return Principal(record.role, record.name, tid)

    async def _bootstrapped(self, token_digest: str) -> TokenRecord | None:
        """The bootstrap admin token's record, written at its first use (once, whichever replica is first)."""
        if self._bootstrap is None or not hmac.compare_digest(token_digest, self._bootstrap):
            return None
        now = self._clock.now()
        key = keys.token(token_digest)
        record = TokenRecord(
            role=Role.ADMIN, name="bootstrap", created_at=now, expires_at=now + self._bootstrap_ttl, bootstrap=True
        )
        result = await self._store.txn([Compare.missing(key)], [Op.put(key, record.to_bytes())], [Op.get(key)])
        if result.succeeded:
            return record
        stored = result.responses[0]  # another replica recorded it first
        return _record(stored) if isinstance(stored, KeyValue) else None

    async def consume_join(
        self, token: str, cluster: str, check: Callable[[TokenRecord], None] = lambda _: None
    ) -> TokenRecord | None:
        """Spend a one-time join token made for ``cluster``, atomically, once ``check`` (which raises to
        refuse) accepts its record.

        Returns the token's record (None for no valid token); a token presented with another cluster's
        name, or refused by ``check``, is left unspent.
        """
        key = keys.token(digest(token))
        kv = await self._store.get(key)
        if kv is None:
            return None
        record = _record(kv)
        if record.role is not Role.JOIN or record.ended(self._clock.now()) is not None:
            return None
        if record.name != cluster:
            return record
        check(record)
        result = await self._store.txn([Compare.mod_revision(key, "==", kv.mod_revision)], [Op.delete(key)], [])
        return record if result.succeeded else None

    async def rotate_cluster(self, cluster: str) -> str:
        """A new credential for ``cluster``; every earlier one is revoked in the same txn, so it stops at once."""
        token = new_token(Role.CLUSTER)
        now = self._clock.now()
        record = TokenRecord(role=Role.CLUSTER, name=cluster, created_at=now)
        ops = [Op.put(keys.token(digest(token)), record.to_bytes())]
        for kv in await self._store.range(keys.TOKENS):
            old = _record(kv)
            if old.role is Role.CLUSTER and old.name == cluster and old.ended(now) is None:
                old.revoked_at, old.revoked_because = now, f"cluster {cluster} joined again"
                ops.append(Op.put(kv.key, old.to_bytes()))
        await self.records.caught_up((await self._store.txn([], ops, [])).revision)
        return token

    async def list(self) -> list[TokenInfo]:
        kvs = await self._store.range(keys.TOKENS)
        infos = [TokenInfo(kv.key.removeprefix(keys.TOKENS)[:ID_LENGTH], _record(kv)) for kv in kvs]
        return sorted(infos, key=lambda info: (info.record.created_at or 0.0, info.id))

    async def revoke(self, tid: str, because: str) -> TokenInfo:
        """Revoke the token with id ``tid`` (a revoked one stays as it was); UnknownToken if there is none."""
        if not _ID.fullmatch(tid):
            raise ValueError(f"a token id is {ID_LENGTH} hex digits (see `fedq token list`), not {tid!r}")
        found = await self._store.range(keys.token(tid))
        if len(found) != 1:
            raise UnknownToken(tid)
        kv = found[0]
        record = _record(kv)
        if record.revoked_at is None:
            record.revoked_at, record.revoked_because = self._clock.now(), because
            await self.records.caught_up(await self._store.put(kv.key, record.to_bytes()))
        return TokenInfo(tid, record)

    async def close(self) -> None:
        await self.records.close()


def _record(kv: KeyValue) -> TokenRecord:
    return TokenRecord.model_validate_json(kv.value)


def _prunable(record: TokenRecord, now: float) -> bool:
    ended = record.ended(now)
    return not record.bootstrap and ended is not None and now - ended > KEEP_ENDED
