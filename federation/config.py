"""``configs/federation.yaml``: scheduler, fair-share, cluster-liveness and API limits.

The same keys are the ``policy:`` block of a simulator scenario, so one file can be replayed
before it is deployed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from federation.documents import MAX_DEPTH, MAX_EXPANDED_BYTES, DocumentLimits, DocumentRefused, parse_yaml
from federation.models.job import MAX_RETRIES
from federation.models.numbers import Integer, UsageWeight, positive_seconds, seconds
from policies.units import format_duration, parse_quantity

Seconds = Annotated[float, BeforeValidator(seconds)]
"""A duration in a config file ('90s', '5m', a number of seconds), not negative."""
PositiveSeconds = Annotated[float, BeforeValidator(positive_seconds)]
"""A duration in a config file that must be more than 0."""


KIB = 1024
MIB = 1024 * KIB


def _bytes(value: Any) -> int:
    amount = parse_quantity(value)
    if not (amount >= 1 and amount.is_integer() and amount < 2**63):
        raise ValueError(f"must be a whole number of bytes, at least 1, e.g. 262144 or 256Ki (got {value!r})")
    return int(amount)


Bytes = Annotated[int, BeforeValidator(_bytes)]
"""A size in a config file: bytes, or a quantity such as ``256Ki`` or ``1Gi``."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FairShareConfig(_Section):
    half_life: float = Field(86400.0, alias="halfLife")
    usage_weights: dict[str, UsageWeight] = Field(default_factory=lambda: {"cpu": 1.0}, alias="usageWeights")
    dominant_share: bool = Field(False, alias="dominantShare")

    @field_validator("half_life", mode="before")
    @classmethod
    def _half_life(cls, value: Any) -> float:
        return positive_seconds(value)


class ReservationConfig(_Section):
    after: float = 0.0
    depth: Integer | Literal["all"] = 1

    @field_validator("after", mode="before")
    @classmethod
    def _after(cls, value: Any) -> float:
        return seconds(value)

    @field_validator("depth")
    @classmethod
    def _depth(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 0:
            raise ValueError("reservation depth must be 0 or more, or 'all'")
        return value


class ClusterLivenessConfig(_Section):
    lost_after: float = Field(15.0, alias="lostAfter")
    requeue_after: float = Field(60.0, alias="requeueAfter")
    admit_within: float = Field(300.0, alias="admitWithin")
    """A job a cluster took (Dispatched) but did not admit within this goes back to the queue."""

    @field_validator("lost_after", "requeue_after", "admit_within", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> float:
        return positive_seconds(value)

    @model_validator(mode="after")
    def _requeue_once_lost(self) -> ClusterLivenessConfig:
        """A silent cluster's jobs are requeued only once it counts as lost: never while it is Ready."""
        if self.requeue_after < self.lost_after:
            raise ValueError(
                f"requeueAfter ({format_duration(self.requeue_after)}) must not be shorter than lostAfter "
                f"({format_duration(self.lost_after)}): a silent cluster's jobs would be requeued while it "
                "still counts as Ready"
            )
        return self


class EvictionConfig(_Section):
    """What may stop running jobs: victims that have run ``grace`` seconds, ``maxPerMinute`` at most."""

    enabled: bool = True
    grace: float = 30.0
    max_per_minute: Integer = Field(20, alias="maxPerMinute", ge=0)

    @field_validator("grace", mode="before")
    @classmethod
    def _grace(cls, value: Any) -> float:
        return seconds(value)


class ReclaimConfig(EvictionConfig):
    """A queue below its fair-share slice takes back what other queues borrowed (on by default)."""


class PreemptionConfig(EvictionConfig):
    """Priority preemption in the federation, off by default as in Kueue and Slurm: a job may stop
    strictly lower-priority preemptible jobs of its own queue."""

    enabled: bool = False


class StoreUpkeepConfig(_Section):
    """What the leader does to keep the store from growing without bound."""

    compact_every: float = Field(300.0, alias="compactEvery")
    keep_finished: float = Field(7 * 86400.0, alias="keepFinished")
    budget_bytes: Bytes = Field(1536 * MIB, alias="budgetBytes")
    """New work is refused (503, "store nearly full") once etcd's database reaches this: keep it below
    etcd's ``--quota-backend-bytes`` (2 GiB by default) so etcd's NOSPACE alarm, which stops every
    write, is never reached through the API."""
    defrag_every: float = Field(3600.0, alias="defragEvery")
    defrag_above: Bytes = Field(200 * MIB, alias="defragAbove")
    """A member is defragmented when this much of its file is free pages (etcd-defrag's default rule), or
    when it has any once the store is past ``budgetBytes``: compaction frees pages, only this gives them back."""

    @field_validator("compact_every", "keep_finished", "defrag_every", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> float:
        return positive_seconds(value)


class JobsConfig(_Section):
    """How a job whose run fails on a cluster for its own reasons is retried (a spec's ``maxRetries``
    overrides ``maxRetries``); requeues that are a cluster's doing (lost, reclaim) are not retries."""

    max_retries: Integer = Field(3, alias="maxRetries", ge=0, le=MAX_RETRIES)
    retry_backoff: Seconds = Field(10.0, alias="retryBackoff")
    """The wait before the first retry; each later retry waits twice the one before."""
    max_retry_backoff: Seconds = Field(600.0, alias="maxRetryBackoff")
    kill_invalid_depend: bool = Field(True, alias="killInvalidDepend")
    """Slurm's kill_invalid_depend: a job whose dependency can never be met is Cancelled with the
    reason; false keeps it Pending, saying so, until someone cancels it."""

    def backoff(self, retry: int) -> float:
        """How long retry number ``retry`` (1 for the first) waits after the failure."""
        return min(self.retry_backoff * 2.0 ** (retry - 1), self.max_retry_backoff)


class ApiLimits(_Section):
    max_body_bytes: Integer = Field(8 * 1024 * 1024, alias="maxBodyBytes", gt=0)
    max_depth: Integer = Field(MAX_DEPTH, alias="maxDepth", gt=0, le=1000)
    """How deep a body may nest (Python's parsers recurse once a level, up to about 1,000)."""
    max_expanded_bytes: Integer = Field(MAX_EXPANDED_BYTES, alias="maxExpandedBytes", gt=0)
    """How large a body may be with its YAML aliases written out (sized as compact JSON; never more than
    the route's own body limit)."""
    max_jobs_per_request: Integer = Field(10_000, alias="maxJobsPerRequest", gt=0)
    max_array_count: Integer = Field(10_000, alias="maxArrayCount", gt=0)
    require_walltime: bool = Field(False, alias="requireWalltime")
    page_size: Integer = Field(500, alias="pageSize", gt=0, le=10_000)
    """Jobs per ``GET /v1/jobs`` page when the request gives no ``limit``."""
    list_scan_limit: Integer = Field(10_000, alias="listScanLimit", gt=0)
    """Index keys one ``GET /v1/jobs`` reads at most: bounds a filtered page's work, not its size."""
    max_watches_per_tenant: Integer = Field(16, alias="maxWatchesPerTenant", gt=0, le=10_000)
    """Job event streams (``watch=true``) one tenant (or admin) may hold open at once on one replica."""
    max_streams: Integer = Field(1000, alias="maxStreams", gt=0, le=100_000)
    """Event streams (job events, listings, logs) one replica holds open in all, whoever asks: past it a 429
    with Retry-After. A federation of N replicas serves N times this."""
    max_connections: Integer = Field(2000, alias="maxConnections", gt=0, le=1_000_000)
    """Connections one replica holds open at once, TLS handshakes included: past it a new one is closed at
    once. Above ``maxStreams`` (each stream holds one), and below the process's open-file limit."""
    handshake_timeout: PositiveSeconds = Field(10.0, alias="handshakeTimeout")
    """How long a client has to finish the TLS handshake after connecting."""
    header_timeout: PositiveSeconds = Field(10.0, alias="headerTimeout")
    """How long a client has to send a request's line and headers, from connecting (or from its first
    byte after a previous request): past it a 408 and the connection is closed."""
    body_timeout: PositiveSeconds = Field(60.0, alias="bodyTimeout")
    """How long a client has to send a request's body, from the end of its headers: past it a 408."""

    @model_validator(mode="after")
    def _streams_fit(self) -> ApiLimits:
        if self.max_connections <= self.max_streams:
            raise ValueError(
                f"maxConnections ({self.max_connections}) must be above maxStreams ({self.max_streams}): "
                "each open stream holds a connection"
            )
        return self

    max_record_bytes: Bytes = Field(256 * KIB, alias="maxRecordBytes", le=MIB)
    """One job's stored record at submit, well under etcd's 1.5 MiB request limit: room is left for the
    events a record gathers while it runs, and a txn of several records stays one request."""


class LogsConfig(_Section):
    """Job output (``fedq logs``): where the federation keeps it and how much it takes. Kept in files
    under ``dir``, never in etcd; several replicas share ``dir`` (docs/architecture.md, 4d)."""

    dir: str | None = None
    """None: a temporary directory of the server's own, removed with it (a dev server)."""
    max_bytes_per_job: Bytes = Field(16 * MIB, alias="maxBytesPerJob")
    """One run's output, all tasks and both streams: past it the rest is cut, with a marker line."""
    max_bytes_per_report: Bytes = Field(MIB, alias="maxBytesPerReport")
    """Output one agent report may carry; what does not fit comes with the next reports."""
    cluster_bytes_per_second: Bytes = Field(4 * MIB, alias="clusterBytesPerSecond")
    """Output one cluster may ship per second, on average (bursts up to 5 s of it)."""
    job_bytes_per_second: Bytes = Field(MIB, alias="jobBytesPerSecond")
    """Output one job may ship per second, on average (bursts up to 5 s of it)."""


class Quota(_Section):
    """What one tenant may have unfinished (submitted, not yet ended) at once; None: no limit."""

    jobs: int | None = Field(None, ge=1)
    tasks: int | None = Field(None, ge=1)
    """Tasks of those jobs (each task's replicas counted, arrays' elements each)."""
    bytes: Bytes | None = None
    """Their records' bytes in the store."""


class QuotasConfig(_Section):
    """Per-tenant quotas: ``default`` for every tenant, ``tenants.<name>`` overrides field by field."""

    default: Quota = Field(default_factory=lambda: Quota(jobs=50_000, tasks=1_000_000, bytes=256 * MIB))
    tenants: dict[str, Quota] = Field(default_factory=dict)

    def of(self, tenant: str) -> Quota:
        override = self.tenants.get(tenant)
        if override is None:
            return self.default
        return self.default.model_copy(update=override.model_dump(exclude_none=True))


DAY = 86400.0
DEFAULT_TOKEN_TTL = 30 * DAY


class AuthConfig(_Section):
    """How long tokens live. Every token expires but a cluster's credential, which is replaced when the
    cluster joins again and can be revoked."""

    token_ttl: float = Field(DEFAULT_TOKEN_TTL, alias="tokenTtl")
    """Tenant, admin and metrics tokens created without a ``ttl`` of their own (and the bootstrap admin token)."""
    join_token_ttl: float = Field(DAY, alias="joinTokenTtl")
    """One-time cluster join tokens created without a ``ttl``."""
    max_token_ttl: float = Field(365 * DAY, alias="maxTokenTtl")
    """The longest ``ttl`` a token may be given."""

    @field_validator("token_ttl", "join_token_ttl", "max_token_ttl", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> float:
        return positive_seconds(value)

    @model_validator(mode="after")
    def _within_max(self) -> AuthConfig:
        for name, ttl in (("tokenTtl", self.token_ttl), ("joinTokenTtl", self.join_token_ttl)):
            if ttl > self.max_token_ttl:
                raise ValueError(
                    f"{name} ({format_duration(ttl)}) must not be longer than maxTokenTtl "
                    f"({format_duration(self.max_token_ttl)})"
                )
        return self

    def ttl(self, value: Any) -> float:
        """A requested ``ttl`` in seconds; ValueError says what is allowed."""
        ttl = positive_seconds(value)  # never 'inf' or '1e400': parse_duration refuses them
        if ttl > self.max_token_ttl:
            raise ValueError(f"must be at most {format_duration(self.max_token_ttl)} (auth.maxTokenTtl)")
        return ttl


class AuditConfig(_Section):
    """Where the audit log's JSON lines go: ``stderr`` or a file path (appended to, created mode 0600)."""

    log: str = Field("stderr", min_length=1)


class FederationConfig(_Section):
    cycle_period: float = Field(1.0, alias="cyclePeriod")
    dispatch_per_cycle: Integer = Field(2000, alias="dispatchPerCycle", ge=1)
    accounting_save_every: float = Field(10.0, alias="accountingSaveEvery")
    placement: Literal["pack", "spread", "least-loaded"] = "pack"
    backfill: bool = True
    fairshare: FairShareConfig = Field(default_factory=FairShareConfig)
    reservation: ReservationConfig = Field(default_factory=ReservationConfig)
    cluster: ClusterLivenessConfig = Field(default_factory=ClusterLivenessConfig)
    reclaim: ReclaimConfig = Field(default_factory=ReclaimConfig)
    preemption: PreemptionConfig = Field(default_factory=PreemptionConfig)
    api: ApiLimits = Field(default_factory=ApiLimits)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    store: StoreUpkeepConfig = Field(default_factory=StoreUpkeepConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    quotas: QuotasConfig = Field(default_factory=QuotasConfig)
    logs: LogsConfig = Field(default_factory=LogsConfig)

    @field_validator("accounting_save_every", mode="before")
    @classmethod
    def _save_every(cls, value: Any) -> float:
        return seconds(value)

    @field_validator("cycle_period", mode="before")
    @classmethod
    def _period(cls, value: Any) -> float:
        return positive_seconds(value)


def load_yaml_file(path: str | Path) -> Any:
    """Read one YAML document within the default document limits; errors name the file and the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return parse_yaml(text, DocumentLimits())
    except DocumentRefused as exc:
        raise ValueError(f"{path}: {exc.message}") from None


def load_federation_config(path: str | Path | None) -> FederationConfig:
    if path is None:
        return FederationConfig()
    return FederationConfig.model_validate(load_yaml_file(path) or {})
