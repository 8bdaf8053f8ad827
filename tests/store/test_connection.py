"""Connection settings: URL lists, what TLS and auth need, and the server's flags carrying them whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from federation.cli import build_parser
from federation.cli.server import ETCD_PASSWORD_ENV, etcd_connection, etcd_flags
from federation.store import Endpoint, EtcdConnection


def test_a_url_list_is_the_members_in_order_with_one_scheme() -> None:
    connection = EtcdConnection.parse("https://a:2379, https://10.0.0.2:2380,https://[::1]")

    assert connection.endpoints == (Endpoint("a", 2379), Endpoint("10.0.0.2", 2380), Endpoint("::1", 2379))
    assert connection.tls and connection.urls == "https://a:2379,https://10.0.0.2:2380,https://[::1]:2379"
    assert not EtcdConnection.parse("127.0.0.1:2379").tls  # etcd's bare host:port is plain


@pytest.mark.parametrize(
    ("urls", "extra", "message"),
    [
        ("http://a:1,https://b:2", {}, "mix http and https"),
        ("ftp://a:1", {}, "use http:// or https://"),
        ("", {}, "no etcd endpoint"),
        ("http://a:1", {"ca": Path("ca.pem")}, "needs https://"),
        ("https://a:1", {"cert": Path("c.pem")}, "both its cert and its key"),
        ("https://a:1", {"user": "fedq"}, "both a user and a password"),
    ],
)
def test_an_incomplete_or_mixed_connection_is_refused(urls: str, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EtcdConnection.parse(urls, **extra)


def test_the_password_stays_out_of_repr() -> None:
    connection = EtcdConnection.parse("https://a:1", user="fedq", password="s3cret-value")

    assert "s3cret-value" not in repr(connection) and "fedq" in repr(connection)


def test_the_server_flags_and_environment_carry_a_connection_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    connection = EtcdConnection.parse(
        "https://a:2379,https://b:2379",
        ca=Path("/tls/ca.pem"),
        cert=Path("/tls/fedq.pem"),
        key=Path("/tls/fedq-key.pem"),
        user="fedq",
        password="pw",
        maintenance_cert=Path("/tls/root.pem"),
        maintenance_key=Path("/tls/root-key.pem"),
    )
    flags, env = etcd_flags(connection)
    monkeypatch.setenv(ETCD_PASSWORD_ENV, env[ETCD_PASSWORD_ENV])

    assert "pw" not in flags  # the password travels in the environment, never on the command line
    assert etcd_connection(build_parser().parse_args(["server", *flags])) == connection


def test_maintenance_calls_go_as_the_root_certificate_and_nothing_else_does() -> None:
    connection = EtcdConnection.parse(
        "https://a:2379",
        cert=Path("/tls/fedq.pem"),
        key=Path("/tls/fedq-key.pem"),
        user="fedq",
        password="pw",
        maintenance_cert=Path("/tls/root.pem"),
        maintenance_key=Path("/tls/root-key.pem"),
    )
    root = connection.for_maintenance()

    assert (root.cert, root.key, root.user, root.password) == (
        Path("/tls/root.pem"),
        Path("/tls/root-key.pem"),
        None,
        None,
    )
    assert root.endpoints == connection.endpoints and root.maintenance_cert is None
    assert EtcdConnection.parse("https://a:2379").for_maintenance() == EtcdConnection.parse("https://a:2379")
    with pytest.raises(ValueError, match="maintenance client certificate needs both"):
        EtcdConnection.parse("https://a:2379", maintenance_cert=Path("/tls/root.pem"))
    with pytest.raises(ValueError, match="needs https"):
        EtcdConnection.parse("http://a:2379", maintenance_cert=Path("/r.pem"), maintenance_key=Path("/k.pem"))


def test_a_user_without_its_password_in_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ETCD_PASSWORD_ENV, raising=False)
    args = build_parser().parse_args(["server", "--store", "etcd", "--etcd", "https://a:1", "--etcd-user", "fedq"])

    with pytest.raises(ValueError, match=ETCD_PASSWORD_ENV):
        etcd_connection(args)
