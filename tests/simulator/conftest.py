"""The scheduler harness fixture (real etcd, the production scheduler) for comparing with it."""

from tests.scheduler.conftest import make_harness

__all__ = ["make_harness"]
