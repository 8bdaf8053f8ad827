"""The federation's accountant: who holds what, since when, decayed into HTCondor user priorities.

Incremental: each start or stop touches only the meters of that job's tenant, its queue and the
queue's ancestors, and its (tenant, queue, cluster) series; everything else is integrated lazily
when read. Time comes from the events (and the injected clock for reads), never the wall clock.
An event dated before the latest time seen (a late report, or one after a save) is applied at that
latest time and then backdated: its run's share of the time between is added to (or taken from) the
resource-seconds, real priorities and history, so late events count as if they had come in order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation import keys
from federation.accounting import storage
from federation.accounting.history import DEFAULT_RETENTION, DEFAULT_TIERS, History, Tier, check_tiers
from federation.accounting.meter import Meter, RealPriorities
from federation.accounting.snapshot import AccountingSnapshot, SeriesKey
from federation.store import Op, Store
from policies import resources as res
from policies.clock import Clock
from policies.snapshot import ROOT, Usage


def queue_ancestry(path: str) -> list[str]:
    """``a.b.c`` -> ``[a.b.c, a.b, a, ""]``: the queue, its ancestors, and the root."""
    out = []
    while path:
        out.append(path)
        path = path.rsplit(".", 1)[0] if "." in path else ROOT
    out.append(ROOT)
    return out


@dataclass(frozen=True, slots=True)
class Run:
    """A job holding resources on a cluster since ``started``."""

    tenant: str
    queue: str
    cluster: str
    resources: dict[str, float]
    units: float
    started: float


class Accountant:
    """Per tenant, queue and (tenant, queue, cluster): allocation now, resource-seconds, RUP, history."""

    def __init__(
        self,
        clock: Clock,
        half_life: float,
        weights: Mapping[str, float],
        queue_half_life: Mapping[str, float] | None = None,
        *,
        tiers: Sequence[Tier] = DEFAULT_TIERS,
        retention: float | None = DEFAULT_RETENTION,
    ) -> None:
        if half_life <= 0:
            raise ValueError(f"half_life must be positive, got {half_life}")
        check_tiers(tiers)
        self.clock = clock
        self.half_life = half_life
        self.weights = dict(weights)
        self.queue_half_life = dict(queue_half_life or {})
        self.tiers = tuple(tiers)
        self.retention = retention
        self._reset()

    def _reset(self) -> None:
        self._time = float("-inf")
        self.saved_revision: int | None = None  # of the job changes the loaded accounting counted
        self._runs: dict[str, Run] = {}
        self._tenants: dict[str, Meter] = {}
        self._queues: dict[str, Meter] = {}
        self._series: dict[SeriesKey, Meter] = {}
        self._history: dict[SeriesKey, History] = {}
        self._factors: dict[str, float] = {}
        self._dirty: set[str] = set()  # tenants whose documents changed since the last save
        self._runs_dirty: set[str] = set()  # tenants whose running jobs changed since the last save
        self._chunks: dict[str, int] = {}  # run chunks each tenant has in the store
        self._stale: dict[str, list[str]] = {}  # history keys of tiers no longer configured, to delete

    # events

    def start(
        self, job_id: str, tenant: str, queue: str, cluster: str, resources: Mapping[str, float], at: float
    ) -> None:
        """``job_id`` holds ``resources`` from ``at``; a job already running is left as it is."""
        if job_id in self._runs:
            return
        run = Run(tenant, queue, cluster, dict(resources), res.units(resources, self.weights), at)
        self._runs[job_id] = run
        self._apply(run, at, +1)

    def stop(self, job_id: str, at: float) -> None:
        """``job_id`` released its resources at ``at``; unknown (or already stopped) jobs are ignored."""
        run = self._runs.pop(job_id, None)
        if run is not None:
            self._apply(run, max(at, run.started), -1)

    def set_factor(self, tenant: str, factor: float) -> None:
        """HTCondor's priority factor: EUP = RUP x factor (higher factor, smaller slice)."""
        if factor <= 0:
            raise ValueError(f"priority factor must be positive, got {factor}")
        self._factors[tenant] = factor
        self._dirty.add(tenant)

    def set_queue_half_lives(self, half_lives: Mapping[str, float]) -> None:
        """Per-queue half-life overrides (the queue tree's ``halfLife``), for existing and new queue
        meters: each RUP is as of its meter's last update, so the new half-life applies from there on."""
        self.queue_half_life = dict(half_lives)
        for path, meter in self._queues.items():
            meter.half_life = self._queue_half_life(path)

    def running(self) -> set[str]:
        """Ids of the jobs the accountant counts as holding resources (to reconcile after a load)."""
        return set(self._runs)

    def started(self, job_id: str) -> float | None:
        """When the run counted for ``job_id`` started (None: none is counted), to tell it from a later run."""
        run = self._runs.get(job_id)
        return None if run is None else run.started

    # reads

    def usage(self, now: float | None = None) -> Usage:
        """The scheduler's fair-share inputs at ``now``, computed (when read) without moving any meter."""
        at = self.clock.now() if now is None else now
        return Usage(
            queue_rup=RealPriorities(self._queues, at),
            tenant_rup=RealPriorities(self._tenants, at),
            tenant_factor={**dict.fromkeys(self._tenants, 1.0), **self._factors},
        )

    def advance(self, now: float | None = None) -> float:
        """Integrate every meter and history up to ``now`` (default: the clock); returns the time used."""
        at = self._tick(self.clock.now() if now is None else now)
        for meter in (*self._tenants.values(), *self._queues.values()):
            meter.advance(at)
        for key in self._series:
            self._advance_series(key, at)
            self._history[key].compact(at, self.retention)
        return at

    def snapshot(self, now: float | None = None) -> AccountingSnapshot:
        at = self.advance(now)
        return AccountingSnapshot(
            time=at,
            weights=dict(self.weights),
            tenants={t: m.copy() for t, m in self._tenants.items()},
            queues={q: m.copy() for q, m in self._queues.items()},
            series={k: m.copy() for k, m in self._series.items()},
            history={k: h.copy() for k, h in self._history.items()},
            factors=dict(self._factors),
        )

    # persistence

    async def save(self, store: Store, applied: int | None = None) -> int:
        """Write what changed since the last save (see ``storage``); returns the store revision.

        ``applied``: the store revision up to which the job changes counted here were read, so a
        leader that loads this can tell the runs that ended after it (``saved_revision``)."""
        at = self.advance()
        series: dict[str, list[SeriesKey]] = {}
        for key in self._series:
            series.setdefault(key[0], []).append(key)
        changed = (
            self._dirty
            | {t for t, m in self._tenants.items() if m.runs}
            | {key[0] for key, history in self._history.items() if history.dirty}
        )
        runs: dict[str, list[list[Any]]] = {t: [] for t in self._runs_dirty}
        if runs:
            for job_id, run in self._runs.items():
                if run.tenant in runs:
                    runs[run.tenant].append([job_id, run.queue, run.cluster, run.started, run.resources])
        groups = [
            [
                Op.put(
                    storage.QUEUES,
                    storage.dumps({"t": at, "r": applied, "q": {q: m.encode() for q, m in self._queues.items()}}),
                )
            ]
        ]
        for tenant in sorted(changed | self._runs_dirty):
            ops: list[Op] = []
            if tenant in runs:
                chunks = list(storage.chunked(runs[tenant]))
                ops += [Op.put(storage.runs_key(tenant, i), chunk) for i, chunk in enumerate(chunks)]
                ops += [Op.delete(storage.runs_key(tenant, i)) for i in range(len(chunks), self._chunks.get(tenant, 0))]
                self._chunks[tenant] = len(chunks)
            for key in series.get(tenant, ()):
                for width, chunk, data in self._history[key].take_dirty():
                    name = storage.history_key(*key, width, chunk)
                    ops.append(Op.delete(name) if data is None else Op.put(name, storage.dumps(data)))
            ops += [Op.delete(name) for name in self._stale.pop(tenant, ())]
            doc = {
                "m": self._tenants[tenant].encode() if tenant in self._tenants else None,
                "f": self._factors.get(tenant),
                "s": [[q, c, self._series[(t, q, c)].encode()] for t, q, c in series.get(tenant, ())],
                "c": self._chunks.get(tenant, 0),
            }
            ops.append(Op.put(storage.tenant_key(tenant), storage.dumps(doc)))
            groups.append(ops)
        revision = await storage.write_groups(store, groups)
        self._dirty.clear()
        self._runs_dirty.clear()
        return revision

    async def load(self, store: Store) -> None:
        """Replace this accountant's state with the one saved in ``store`` (empty if none was).

        Everything is read before anything is replaced, so nothing else running meanwhile (the
        scheduler applying job changes) ever sees a half-loaded accountant."""
        queues = await store.get(storage.QUEUES)
        stored_runs = await store.range(storage.RUNS)
        tenants = await store.range(storage.TENANTS)
        histories = await store.range(keys.HISTORY)
        self._reset()
        if queues is not None:
            doc = json.loads(queues.value)
            self._time = float(doc["t"])
            if doc.get("r") is not None:  # absent from saves made before it was recorded
                self.saved_revision = int(doc["r"])
            self._queues = {q: Meter.decode(m, self._queue_half_life(q)) for q, m in doc["q"].items()}
        runs = {kv.key: json.loads(kv.value) for kv in stored_runs}
        for kv in tenants:
            tenant = kv.key.removeprefix(storage.TENANTS)
            doc = json.loads(kv.value)
            if doc["m"] is not None:
                self._tenants[tenant] = Meter.decode(doc["m"], self.half_life)
            if doc["f"] is not None:
                self._factors[tenant] = float(doc["f"])
            for queue, cluster, meter in doc["s"]:
                self._series[(tenant, queue, cluster)] = Meter.decode(meter, None)
                self._history[(tenant, queue, cluster)] = History(self.tiers)
            self._chunks[tenant] = int(doc["c"])
            for chunk in range(self._chunks[tenant]):
                for job_id, queue, cluster, started, amounts in runs.get(storage.runs_key(tenant, chunk), []):
                    self._runs[job_id] = Run(
                        tenant, queue, cluster, amounts, res.units(amounts, self.weights), float(started)
                    )
        for kv in histories:
            key, width, _ = storage.parse_history_key(kv.key)
            if key not in self._series:  # a save cut short: keep the usage, as an idle series
                self._series[key] = Meter(None, self._time)
                self._history[key] = History(self.tiers)
            if not self._history[key].absorb(width, json.loads(kv.value)):
                self._stale.setdefault(key[0], []).append(kv.key)
        for history in self._history.values():
            history.settle()

    # internals

    def _tick(self, at: float) -> float:
        self._time = max(self._time, at)
        return self._time

    def _queue_half_life(self, queue: str) -> float:
        return self.queue_half_life.get(queue, self.half_life)

    def _apply(self, run: Run, at: float, sign: int) -> None:
        """Start (sign +1) or end (sign -1) ``run`` at ``at``: now if ``at`` is past, then backdated."""
        now = self._tick(at)
        tenant = self._tenants.get(run.tenant)
        if tenant is None:
            tenant = self._tenants[run.tenant] = Meter(self.half_life, now)
        meters = [tenant]
        for path in queue_ancestry(run.queue):
            meter = self._queues.get(path)
            if meter is None:
                meter = self._queues[path] = Meter(self._queue_half_life(path), now)
            meters.append(meter)
        key = (run.tenant, run.queue, run.cluster)
        if key not in self._series:
            self._series[key] = Meter(None, now)
            self._history[key] = History(self.tiers)
        self._advance_series(key, now)
        meters.append(self._series[key])
        for meter in meters:
            meter.change(now, run.resources, run.units, sign)
        if at < now:
            for meter in meters:
                meter.backdate(at, run.resources, run.units, sign)
            self._history[key].add(at, now, sign * run.units, {name: sign * x for name, x in run.resources.items()})
        self._dirty.add(run.tenant)
        self._runs_dirty.add(run.tenant)

    def _advance_series(self, key: SeriesKey, now: float) -> None:
        meter = self._series[key]
        if meter.runs and now > meter.last:
            self._history[key].add(meter.last, now, meter.units, meter.rates)
        meter.advance(now)
