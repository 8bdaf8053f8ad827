"""gRPC to etcd: a channel per endpoint (TLS, an auth token each), failover between them, error mapping.

Only aetcd's generated stubs are used (``aetcd.rpc``): its client opens one plain-text channel to
one host (no TLS, martyanov/aetcd#37), never sends its token with the stubs, and does not
authenticate again when etcd forgets a token.

Failover follows etcd's own Go client. A request goes out only on a channel that is READY; an
endpoint that is not ready within ``connect_timeout`` is passed over for the next, which is safe
for any request since nothing was sent. A request that fails UNAVAILABLE after it was sent has an
unknown outcome: a read (``retry=True``) is sent again on the next endpoint, once per endpoint; a
write is not, since a put or a txn sent twice may apply twice or overwrite someone's newer write.
Its error is raised (``StoreUnavailable``: maybe applied) and the next call goes to the next
endpoint; the caller reads back, as the scheduler does (its txns compare revisions, so a plan
made again from the state it reads back cannot apply twice).

A token etcd no longer knows (a restarted member: simple tokens live in memory, etcd-io/etcd#7012)
or one older than the last auth change is refused before anything is applied, so the channel
authenticates again and the request is repeated once, whatever it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import structlog
from aetcd import rpc

from federation.store.connection import Endpoint, EtcdConnection
from federation.store.errors import (
    LeaseNotFound,
    PermissionDenied,
    RequestTooLarge,
    StoreError,
    StoreFull,
    StoreUnavailable,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

UNAVAILABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
_STALE_TOKEN = ("invalid auth token", "revision of auth store is old")
DEFAULT_CONNECT_TIMEOUT = 1.0
# A watch on a member that lost its leader would see no events at all: with this, etcd ends the
# stream (UNAVAILABLE, "no leader") and the watch resumes on another member.
REQUIRE_LEADER = ("hasleader", "true")
# raft drops a proposal it cannot take now, a leader transfer under way (etcd's MoveLeader), so that its
# proposer fails fast; etcd passes that on as UNKNOWN. Nothing was applied: the next try may land.
_DROPPED = "raft proposal dropped"


@dataclass
class Link:
    """One endpoint's channel, its stubs and the token it authenticated with."""

    endpoint: Endpoint
    channel: grpc.aio.Channel
    kv: Any
    lease: Any
    watch: Any
    auth: Any
    maintenance: Any
    token: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("token", self.token),) if self.token is not None else ()


class EtcdChannels:
    """The channels of one store; ``current`` is the endpoint calls go to until it fails."""

    def __init__(
        self,
        connection: EtcdConnection,
        *,
        options: dict[str, Any],
        timeout: float | None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        self.connection = connection
        self.timeout = timeout
        self._credentials = connection.credentials()
        self._options = list(options.items())
        self._connect_timeout = connect_timeout
        self._links: list[Link | None] = [None] * len(connection.endpoints)
        self._current = 0
        self.closed = False

    @property
    def current(self) -> Endpoint:
        return self.connection.endpoints[self._current]

    async def unary(self, method: Callable[[Link], Any], request: Any, *, retry: bool) -> Any:
        """Send one unary request (``method`` picks the stub's method from a link)."""

        async def send(link: Link) -> Any:
            return await method(link)(request, timeout=self.timeout, metadata=link.metadata)

        return await self.call(send, retry=retry)

    async def call(self, use: Callable[[Link], Awaitable[T]], *, retry: bool) -> T:
        """Run ``use`` on a ready link, failing over as the module says; gRPC errors come out as they are."""
        sent = 0
        renewed = False
        while True:
            index, link, connected = await self.ready()
            try:
                return await use(link)
            except grpc.aio.AioRpcError as error:
                if not renewed and self._stale_token(error):
                    await self.authenticate(link, stale=link.token)
                    renewed = True
                    continue
                if error.code() not in UNAVAILABLE:
                    raise
                self.failed(index, error)
                sent += 1
                if not (retry and connected) or sent >= len(self._links):
                    raise

    async def to_member(self, index: int, method: Callable[[Link], Any], request: Any, *, timeout: float | None) -> Any:
        """Send one request to endpoint ``index`` alone, never failed over: a maintenance call is about
        that member (its database, its defragmentation)."""
        link = self._link(index)
        if not await self._connected(link):
            raise StoreUnavailable(f"etcd member {self._target(index)} is not reachable")
        await self.authenticate(link)
        try:
            return await method(link)(request, timeout=timeout, metadata=link.metadata)
        except grpc.aio.AioRpcError as error:
            if not self._stale_token(error):
                raise
        await self.authenticate(link, stale=link.token)
        return await method(link)(request, timeout=timeout, metadata=link.metadata)

    async def ready(self) -> tuple[int, Link, bool]:
        """The current endpoint's link once connected and authenticated, passing over endpoints that are not.

        When none is ready in time the current one is returned anyway, not connected (False): the
        call then fails with gRPC's own reason (refused, a TLS handshake), and is not tried again,
        or goes through if the endpoint just came up."""
        for _ in range(len(self._links)):
            index = self._current
            link = self._link(index)
            try:
                if await self._connected(link):
                    await self.authenticate(link)
                    return index, link, True
            except grpc.aio.AioRpcError as error:
                if error.code() not in UNAVAILABLE:
                    raise
            self.failed(index, None)
        return self._current, self._link(self._current), False

    async def authenticate(self, link: Link, *, stale: str | None = None) -> None:
        """Get a token for the connection's user (no-op without one); ``stale`` replaces a refused token."""
        user, password = self.connection.user, self.connection.password
        if user is None or password is None:
            return
        async with link.lock:
            if link.token is not None and link.token != stale:
                return  # another call got a fresh one meanwhile
            request = rpc.AuthenticateRequest(name=user, password=password)
            try:
                response = await link.auth.Authenticate(request, timeout=self.timeout)
            except grpc.aio.AioRpcError as error:
                if error.code() not in UNAVAILABLE:
                    raise StoreError(f"etcd refused user {user!r}: {error.details()}") from error
                raise
            link.token = str(response.token)

    def failed(self, index: int, error: grpc.aio.AioRpcError | None) -> None:
        """Move on from endpoint ``index`` (unless another call already did)."""
        if self._current != index:
            return
        self._current = (index + 1) % len(self._links)
        if len(self._links) > 1:
            reason = error.code().name if error is not None else "not ready"
            log.warning(
                "etcd endpoint failed, moving on", failed=self._target(index), next=self.current.target, reason=reason
            )

    async def reset(self) -> None:
        """Close every channel; they open again on the next call (watches resume on them)."""
        links, self._links = self._links, [None] * len(self._links)
        for link in links:
            if link is not None:
                await link.channel.close()

    async def close(self) -> None:
        self.closed = True
        await self.reset()

    def _link(self, index: int) -> Link:
        if self.closed:
            raise StoreError("the store is closed")
        link = self._links[index]
        if link is None:
            target = self._target(index)
            if self._credentials is not None:
                channel = grpc.aio.secure_channel(target, self._credentials, options=self._options)
            else:
                channel = grpc.aio.insecure_channel(target, options=self._options)
            stubs = (
                rpc.KVStub(channel),
                rpc.LeaseStub(channel),
                rpc.WatchStub(channel),
                rpc.AuthStub(channel),
                rpc.MaintenanceStub(channel),
            )
            link = Link(self.connection.endpoints[index], channel, *stubs)
            self._links[index] = link
        return link

    async def _connected(self, link: Link) -> bool:
        if link.channel.get_state(try_to_connect=True) is grpc.ChannelConnectivity.READY:
            return True
        try:
            async with asyncio.timeout(self._connect_timeout):
                await link.channel.channel_ready()
            return True
        except TimeoutError:
            return False

    def _stale_token(self, error: grpc.aio.AioRpcError) -> bool:
        details = error.details() or ""
        return self.connection.user is not None and any(reason in details for reason in _STALE_TOKEN)

    def _target(self, index: int) -> str:
        return self.connection.endpoints[index].target


@contextmanager
def mapped_errors() -> Iterator[None]:
    """gRPC's errors as the store's, named by what a caller can do about them."""
    try:
        yield
    except grpc.aio.AioRpcError as error:
        raise store_error(error) from error
    except asyncio.CancelledError as error:
        if not channel_closed_under_us():
            raise
        raise StoreUnavailable("the etcd channel was closed during the call") from error


def channel_closed_under_us() -> bool:
    """grpc.aio raises CancelledError when the channel closes; tell that from this task being cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0


def store_error(error: grpc.aio.AioRpcError) -> Exception:
    code = error.code()
    details = error.details() or code.name
    if code in UNAVAILABLE or _DROPPED in details:
        return StoreUnavailable(details)
    if code == grpc.StatusCode.NOT_FOUND and "lease not found" in details:
        return LeaseNotFound(details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "space exceeded" in details:
        return StoreFull(
            f"the store is full (etcd: {details}): nothing was written; only reads and deletes work until an "
            "operator compacts and defragments etcd and disarms its NOSPACE alarm"
        )
    if "request is too large" in details or (
        code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details
    ):
        return RequestTooLarge(details)
    if "permission denied" in details:
        return PermissionDenied(details)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return ValueError(f"etcd rejected the request: {details}")
    return StoreError(f"{code.name}: {details}")
