"""Chaos fixtures: the store suite's three-member etcd cluster, whose members a test may SIGKILL."""

from tests.store.conftest import etcd_cluster

__all__ = ["etcd_cluster"]
