"""How to reach an etcd cluster and who to be there: endpoints, TLS files and an etcd user.

One value carries all of it, so the server's flags, ``fedq up``, the test fixtures and the client
agree on a connection without passing five arguments each.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import grpc

_SCHEMES = {"http": False, "etcd": False, "https": True}
DEFAULT_PORT = 2379


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    @property
    def target(self) -> str:
        """gRPC's spelling of the address (IPv6 in brackets)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class EtcdConnection:
    """Endpoints of one cluster (tried in order, failing over), TLS and etcd authentication.

    ``tls`` comes from the URLs' scheme (``https``); ``ca`` verifies the members (the system's roots
    when None); ``cert``/``key`` are a client certificate (etcd's ``--client-cert-auth``, which also
    names the etcd user by its common name when no ``user`` is given). The password is left out of
    ``repr`` so it never reaches a log. ``maintenance_cert``/``maintenance_key`` are a client certificate
    of a user with etcd's root role, used only for what etcd allows root alone (defragmenting), so the
    user everything else runs as keeps to its prefix."""

    endpoints: tuple[Endpoint, ...]
    tls: bool = False
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    maintenance_cert: Path | None = None
    maintenance_key: Path | None = None

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("no etcd endpoint given")
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate needs both its cert and its key")
        if not self.tls and (self.ca or self.cert):
            raise ValueError("a CA or client certificate needs https:// endpoints")
        if (self.user is None) != (self.password is None):
            raise ValueError("etcd authentication needs both a user and a password")
        if (self.maintenance_cert is None) != (self.maintenance_key is None):
            raise ValueError("a maintenance client certificate needs both its cert and its key")
        if not self.tls and self.maintenance_cert:
            raise ValueError("a maintenance client certificate needs https:// endpoints")

    @classmethod
    def parse(
        cls,
        urls: str,
        *,
        ca: Path | None = None,
        cert: Path | None = None,
        key: Path | None = None,
        user: str | None = None,
        password: str | None = None,
        maintenance_cert: Path | None = None,
        maintenance_key: Path | None = None,
    ) -> EtcdConnection:
        """``https://a:2379,https://b:2379`` (or ``http://``, ``etcd://``, a bare ``host:port``); one scheme for all."""
        schemes, endpoints = set(), []
        for url in (part.strip() for part in urls.split(",")):
            if not url:
                continue
            parts = urlsplit(url if "://" in url else f"http://{url}")
            if parts.scheme not in _SCHEMES:
                raise ValueError(f"etcd endpoint {url!r}: use http:// or https://")
            if not parts.hostname:
                raise ValueError(f"etcd endpoint {url!r} has no host")
            schemes.add(_SCHEMES[parts.scheme])
            endpoints.append(Endpoint(parts.hostname, parts.port or DEFAULT_PORT))
        if len(schemes) > 1:
            raise ValueError(f"etcd endpoints {urls!r} mix http and https")
        tls = bool(schemes and schemes.pop())
        return cls(tuple(endpoints), tls, ca, cert, key, user, password, maintenance_cert, maintenance_key)

    def for_maintenance(self) -> EtcdConnection:
        """The same members as the maintenance certificate's user, or as this one without such a certificate."""
        if self.maintenance_cert is None:
            return self
        return replace(
            self,
            cert=self.maintenance_cert,
            key=self.maintenance_key,
            user=None,
            password=None,
            maintenance_cert=None,
            maintenance_key=None,
        )

    @property
    def urls(self) -> str:
        scheme = "https" if self.tls else "http"
        return ",".join(f"{scheme}://{endpoint.target}" for endpoint in self.endpoints)

    def credentials(self) -> grpc.ChannelCredentials | None:
        """The channel's TLS credentials (None for plain HTTP), read from the files now."""
        if not self.tls:
            return None
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "CA"),
            private_key=_read(self.key, "client key"),
            certificate_chain=_read(self.cert, "client certificate"),
        )


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read the etcd {what} {path}: {error.strerror}") from error
