"""Store failures, named by what a caller can do about them rather than by backend."""

from __future__ import annotations


class StoreError(Exception):
    """Any store failure; catch this to treat every backend the same."""


class CompactedError(StoreError):
    """The history a watch needs was compacted: re-read the state, then watch from its revision."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"revision compacted; history starts at {compact_revision}")
        self.compact_revision = compact_revision


class LeaseNotFound(StoreError):
    """The lease expired or was revoked: its keys are gone and it cannot be renewed."""


class StoreUnavailable(StoreError):
    """The store did not answer; a write that raised this may or may not have been applied."""


class StoreFull(StoreError):
    """etcd's backend quota is exhausted (its NOSPACE alarm), or the federation's store budget below it
    is spent: only reads and deletes help until an operator compacts, defragments and disarms."""


class PermissionDenied(StoreError):
    """etcd refused the call to this store's user (a maintenance call is etcd's root role's only)."""


class RequestTooLarge(StoreError):
    """etcd refused a request over its ``--max-request-bytes``: nothing of it was applied."""
