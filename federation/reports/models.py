"""The report documents: what ``GET /v1/reports/...`` returns and the CLI renders (see docs/reports.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field

Amount = dict[str, float]


class ClusterRow(BaseModel):
    """One tenant's use of one member cluster."""

    cluster: str
    allocated: Amount = Field(default_factory=dict)
    allocated_units: float = 0.0
    resource_hours: Amount = Field(default_factory=dict)
    unit_hours: float = 0.0
    running: int = 0
    completed: int = 0
    failed: int = 0


class TenantRow(BaseModel):
    tenant: str
    queues: list[str] = Field(default_factory=list)
    guarantee: Amount = Field(default_factory=dict)
    cap: Amount = Field(default_factory=dict)
    allocated: Amount = Field(default_factory=dict)
    allocated_units: float = 0.0
    share_now: float = 0.0
    share_window: float = 0.0
    fair_share: float = 0.0
    fair_share_units: float = 0.0
    borrowed: Amount = Field(default_factory=dict)
    lent: Amount = Field(default_factory=dict)
    real_priority: float
    effective_priority: float
    priority_factor: float = 1.0
    resource_hours: Amount = Field(default_factory=dict)
    unit_hours: float = 0.0
    running: int = 0
    pending: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    wait_p50: float | None = None
    wait_p95: float | None = None
    last_usage: float | None = None
    clusters: list[ClusterRow] = Field(default_factory=list)


class QueueRow(BaseModel):
    queue: str
    guarantee: Amount = Field(default_factory=dict)
    cap: Amount = Field(default_factory=dict)
    allocated: Amount = Field(default_factory=dict)
    allocated_units: float = 0.0
    fair_share_units: float = 0.0
    borrowed: Amount = Field(default_factory=dict)
    lent: Amount = Field(default_factory=dict)
    real_priority: float
    effective_priority: float
    resource_hours: Amount = Field(default_factory=dict)
    running: int = 0
    pending: int = 0


class UsageSeries(BaseModel):
    """Weighted unit-seconds per time bin: each tenant's, and everyone's (``total``), for plots; and
    each tenant's fair share (a fraction, and in units) as it was at each edge, from the priorities of then."""

    edges: list[float]
    tenants: dict[str, list[float]]
    total: list[float]
    fair_share: dict[str, list[float]] = Field(default_factory=dict)
    fair_share_units: dict[str, list[float]] = Field(default_factory=dict)


class QuotaReport(BaseModel):
    generated_at: float
    since: float
    until: float
    weights: dict[str, float]
    capacity: Amount
    capacity_units: float
    allocated_units: float
    tenant: str | None = None
    queue: str | None = None
    by_cluster: bool = False
    tenants: list[TenantRow]
    queues: list[QueueRow] = Field(default_factory=list)
    series: UsageSeries | None = None


class UserPrioRow(BaseModel):
    tenant: str
    effective_priority: float
    real_priority: float
    priority_factor: float
    in_use: Amount = Field(default_factory=dict)
    in_use_units: float = 0.0
    accumulated_unit_hours: float = 0.0
    last_usage: float | None = None


class UserPrioReport(BaseModel):
    generated_at: float
    half_life: float
    rows: list[UserPrioRow]
