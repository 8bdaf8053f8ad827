"""``condor_userprio`` for fedq: tenants by effective priority, best (lowest) first."""

from __future__ import annotations

from federation.accounting.snapshot import AccountingSnapshot
from federation.reports.models import UserPrioReport, UserPrioRow
from federation.reports.quota import HOUR


def build_userprio(snapshot: AccountingSnapshot, half_life: float, tenant: str | None = None) -> UserPrioReport:
    """One row per tenant the accountant knows, sorted by EUP then name; ``tenant`` keeps only its row."""
    names = snapshot.tenants.keys() | snapshot.factors.keys()
    rows = []
    for name in names:
        meter = snapshot.tenants.get(name)
        rows.append(
            UserPrioRow(
                tenant=name,
                effective_priority=snapshot.eup(name),
                real_priority=snapshot.rup(name),
                priority_factor=snapshot.factor(name),
                in_use={} if meter is None else dict(sorted(meter.rates.items())),
                in_use_units=0.0 if meter is None else meter.units,
                accumulated_unit_hours=0.0 if meter is None else meter.unit_seconds / HOUR,
                last_usage=None if meter is None else meter.last_usage(snapshot.time),
            )
        )
    rows.sort(key=lambda row: (row.effective_priority, row.tenant))
    return UserPrioReport(
        generated_at=snapshot.time,
        half_life=half_life,
        rows=[row for row in rows if tenant is None or row.tenant == tenant],
    )
