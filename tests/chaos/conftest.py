"""Chaos fixtures: the store suite's three-member etcd cluster, whose members a test may SIGKILL, and
TCP proxies a test may cut (each closed at the test's end)."""

from collections.abc import Callable, Iterator

import pytest

from tests.chaos.proxy import TcpProxy
from tests.store.conftest import etcd_cluster

__all__ = ["etcd_cluster", "tcp_proxy"]

ProxyFactory = Callable[[str, int], TcpProxy]


@pytest.fixture
def tcp_proxy() -> Iterator[ProxyFactory]:
    """``tcp_proxy(host, port)``: a started proxy on loopback to that target."""
    made: list[TcpProxy] = []

    def make(host: str, port: int) -> TcpProxy:
        made.append(TcpProxy(host, port).start())
        return made[-1]

    yield make
    for proxy in made:
        proxy.close()
