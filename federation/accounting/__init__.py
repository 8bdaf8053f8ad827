"""Accounting: allocation over time per tenant, queue and cluster, HTCondor user priorities, history."""

from federation.accounting.accountant import Accountant, queue_ancestry
from federation.accounting.history import History, Tier
from federation.accounting.snapshot import AccountingSnapshot

__all__ = ["Accountant", "AccountingSnapshot", "History", "Tier", "queue_ancestry"]
