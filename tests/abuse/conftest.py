"""Abuse fixtures: the store suite's three-member etcd cluster, for the abuse that must not stall a cluster either."""

from tests.store.conftest import etcd_cluster

__all__ = ["etcd_cluster"]
