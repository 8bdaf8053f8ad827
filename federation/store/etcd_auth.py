"""etcd's authentication on an etcd fedq starts itself: a root user, and a user whose role may read and
write only its key prefixes.

It runs as root through a client certificate whose common name is ``root`` (etcd's
``--client-cert-auth``), so it works the same before auth is enabled and after (a restart of a
data dir whose auth is on sets this start's password), and no root password exists at all.
Synchronous gRPC: ``EtcdServer.start`` is called from plain code and from inside event loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc
from aetcd import rpc

from federation.store.etcd import range_end

ROOT = "root"


def provision(
    target: str,
    credentials: grpc.ChannelCredentials,
    user: str,
    password: str,
    prefixes: Sequence[str],
    *,
    timeout: float = 10.0,
) -> None:
    """Ensure the root user, ``user`` with ``password`` and read-write on ``prefixes`` only, and auth on."""
    with grpc.secure_channel(target, credentials) as channel:
        auth = rpc.AuthStub(channel)
        if not auth.AuthStatus(rpc.AuthStatusRequest(), timeout=timeout).enabled:
            options = rpc.UserAddOptions(no_password=True)
            _unless_exists(lambda: auth.UserAdd(rpc.AuthUserAddRequest(name=ROOT, options=options), timeout=timeout))
            auth.UserGrantRole(rpc.AuthUserGrantRoleRequest(user=ROOT, role=ROOT), timeout=timeout)
        _unless_exists(lambda: auth.RoleAdd(rpc.AuthRoleAddRequest(name=user), timeout=timeout))
        for prefix in prefixes:
            key = prefix.encode()
            perm = rpc.Permission(permType=rpc.Permission.READWRITE, key=key, range_end=range_end(key))
            auth.RoleGrantPermission(rpc.AuthRoleGrantPermissionRequest(name=user, perm=perm), timeout=timeout)
        try:
            auth.UserAdd(rpc.AuthUserAddRequest(name=user, password=password), timeout=timeout)
        except grpc.RpcError as error:
            if not _exists(error):
                raise
            change = rpc.AuthUserChangePasswordRequest(name=user, password=password)
            auth.UserChangePassword(change, timeout=timeout)
        auth.UserGrantRole(rpc.AuthUserGrantRoleRequest(user=user, role=user), timeout=timeout)
        auth.AuthEnable(rpc.AuthEnableRequest(), timeout=timeout)


def _unless_exists(call: Callable[[], object]) -> None:
    try:
        call()
    except grpc.RpcError as error:
        if not _exists(error):
            raise


def _exists(error: grpc.RpcError) -> bool:
    return isinstance(error, grpc.Call) and "already exists" in (error.details() or "")
