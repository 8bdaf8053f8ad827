"""Accounting: allocation over time per tenant, queue and cluster, HTCondor user priorities, history."""

from federation.accounting.accountant import Accountant, Run, queue_ancestry
from federation.accounting.history import DEFAULT_RETENTION, DEFAULT_TIERS, Amounts, History, Tier
from federation.accounting.meter import Meter
from federation.accounting.snapshot import AccountingSnapshot, SeriesKey

__all__ = [
    "DEFAULT_RETENTION",
    "DEFAULT_TIERS",
    "Accountant",
    "AccountingSnapshot",
    "Amounts",
    "History",
    "Meter",
    "Run",
    "SeriesKey",
    "Tier",
    "queue_ancestry",
]
