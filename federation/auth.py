"""Bearer tokens: admin, tenant, cluster and one-time cluster join tokens, stored only as hashes.

A token is ``fedq_<kind>_<random>``; the store keeps ``sha256(token)`` → who it is, so a leaked
store dump grants nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from enum import StrEnum

from federation import keys
from federation.store import Compare, Op, Store


class Role(StrEnum):
    ADMIN = "admin"
    TENANT = "tenant"
    CLUSTER = "cluster"
    JOIN = "join"


@dataclass(frozen=True)
class Principal:
    role: Role
    name: str

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN


def new_token(role: Role) -> str:
    return f"fedq_{role.value}_{secrets.token_urlsafe(24)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """Issues and resolves tokens. The admin token lives only in the server's memory, hashed."""

    def __init__(self, store: Store, admin_token: str) -> None:
        self._store = store
        self._admin_digest = digest(admin_token)

    async def issue(self, role: Role, name: str, *, expires_at: float | None = None) -> str:
        token = new_token(role)
        record = {"role": role.value, "name": name, "expires_at": expires_at}
        await self._store.put(keys.token(digest(token)), json.dumps(record).encode())
        return token

    async def resolve(self, token: str, now: float) -> Principal | None:
        token_digest = digest(token)
        if hmac.compare_digest(token_digest, self._admin_digest):
            return Principal(Role.ADMIN, "admin")
        kv = await self._store.get(keys.token(token_digest))
        if kv is None:
            return None
        record = json.loads(kv.value)
        if record.get("expires_at") is not None and now >= record["expires_at"]:
            return None
        return Principal(Role(record["role"]), record["name"])

    async def consume_join(self, token: str, cluster: str, now: float) -> str | None:
        """Spend a one-time join token made for ``cluster``, atomically.

        Returns the cluster name the token was made for (None for no valid token); a token presented
        with another cluster's name is left unspent.
        """
        key = keys.token(digest(token))
        kv = await self._store.get(key)
        if kv is None:
            return None
        record = json.loads(kv.value)
        if record.get("role") != Role.JOIN.value:
            return None
        if record.get("expires_at") is not None and now >= record["expires_at"]:
            return None
        if record["name"] != cluster:
            return str(record["name"])
        result = await self._store.txn([Compare.mod_revision(key, "==", kv.mod_revision)], [Op.delete(key)], [])
        return cluster if result.succeeded else None
