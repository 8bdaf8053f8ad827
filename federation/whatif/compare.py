"""The numbers ``fedq whatif`` prints: each replay summed up per tenant and per queue, their difference,
and how closely the baseline replay reproduced the recorded starts.

Definitions (the simulator's, ``federation.simulator.metrics``, applied to a group of jobs):
- wait = start - submit over the group's jobs that started; ``mean_wait`` and ``p95_wait`` (nearest rank).
- ``mean_bounded_slowdown`` = mean of max(1, (wait + run) / max(run, 10 s)) over its completed jobs.
- ``usage_share`` = the group's dominant-share-seconds over everyone's; ``fair_share`` its target from the
  run's queue tree (``federation.simulator.entitlement``: the weights of the queues that had jobs), so a
  candidate that changes weights is measured against its own targets.
- ``preempted`` = the group's jobs stopped at least once by reclaim or priority preemption in the run.
- ``change`` = candidate - baseline, per number (None when either side has none).
- fidelity: for each job that started both in the record and in the baseline replay, the start error
  |replayed start - recorded start|; its median and p90 (nearest rank) and max, with how many jobs were
  compared and how many started in only one of the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from federation.lifecycle import JobEvent
from federation.simulator.metrics import bounded_slowdown, dominant_share, percentile
from federation.simulator.records import JobOutcome

PREEMPTED = "preempted: "  # the reason of a reclaim's or a preemption's stop order (federation.lifecycle)


@dataclass(frozen=True, slots=True)
class Replay:
    """One replay's outcome, and the fair-share targets of its queue tree."""

    records: Sequence[JobOutcome]
    capacity: Mapping[str, float]
    tenant_shares: Mapping[str, float]
    queue_shares: Mapping[str, float]
    preempted: frozenset[str]
    utilization: Mapping[str, float | None]


@dataclass(frozen=True, slots=True)
class GroupStats:
    jobs: int
    mean_wait: float | None
    p95_wait: float | None
    mean_bounded_slowdown: float | None
    usage_share: float | None
    fair_share: float | None
    preempted: int


@dataclass(frozen=True, slots=True)
class Fidelity:
    compared: int
    only_recorded: int  # started in the record, not in the replay
    only_replayed: int  # started in the replay, not in the record
    median: float | None
    p90: float | None
    max: float | None


def preempted_jobs(events: Mapping[str, Sequence[JobEvent]]) -> frozenset[str]:
    """Jobs whose history holds a stop for reclaim or preemption."""
    return frozenset(job for job, history in events.items() if any(e.reason.startswith(PREEMPTED) for e in history))


Key = Callable[[JobOutcome], str]


def group_stats(replay: Replay, key: Key, targets: Mapping[str, float]) -> dict[str, GroupStats]:
    """Each group's numbers (the module docstring), groups by ``key`` (a tenant, a queue)."""
    groups: dict[str, list[JobOutcome]] = {}
    for record in replay.records:
        groups.setdefault(key(record), []).append(record)
    usage = {
        name: sum(dominant_share(r.resource_seconds(), replay.capacity) for r in records)
        for name, records in groups.items()
    }
    total = sum(usage.values())
    out = {}
    for name in sorted(groups):
        records = groups[name]
        waits = [w for w in (r.wait for r in records) if w is not None]
        slowdowns = [bounded_slowdown(r.wait or 0.0, r.runtime or 0.0) for r in records if r.completed]
        out[name] = GroupStats(
            jobs=len(records),
            mean_wait=_mean(waits),
            p95_wait=percentile(waits, 95) if waits else None,
            mean_bounded_slowdown=_mean(slowdowns),
            usage_share=usage[name] / total if total > 0 else None,
            fair_share=targets.get(name),
            preempted=sum(r.id in replay.preempted for r in records),
        )
    return out


def fidelity(replayed: Iterable[JobOutcome], recorded_starts: Mapping[str, float | None]) -> Fidelity:
    """The baseline replay's start errors against the recorded starts (same time base; a job not
    recorded is not compared)."""
    errors: list[float] = []
    only_recorded = only_replayed = 0
    for record in replayed:
        if record.id not in recorded_starts:
            continue
        real = recorded_starts[record.id]
        if record.start is not None and real is not None:
            errors.append(abs(record.start - real))
        elif real is not None:
            only_recorded += 1
        elif record.start is not None:
            only_replayed += 1
    return Fidelity(
        compared=len(errors),
        only_recorded=only_recorded,
        only_replayed=only_replayed,
        median=percentile(errors, 50) if errors else None,
        p90=percentile(errors, 90) if errors else None,
        max=max(errors, default=None),
    )


def compare(baseline: Replay, candidate: Replay) -> dict[str, Any]:
    """Per tenant and per queue: each replay's ``GroupStats`` and their ``change``; and each run's utilization."""

    def by(key: Key, targets: Callable[[Replay], Mapping[str, float]]) -> dict[str, Any]:
        before, after = group_stats(baseline, key, targets(baseline)), group_stats(candidate, key, targets(candidate))
        return {name: _side_by_side(before[name], after[name]) for name in sorted(before.keys() & after.keys())}

    return {
        "utilization": {"baseline": dict(baseline.utilization), "candidate": dict(candidate.utilization)},
        "tenants": by(lambda r: r.tenant, lambda run: run.tenant_shares),
        "queues": by(lambda r: r.queue, lambda run: run.queue_shares),
    }


def _side_by_side(before: GroupStats, after: GroupStats) -> dict[str, dict[str, Any]]:
    old, new = asdict(before), asdict(after)
    change = {field: None if old[field] is None or new[field] is None else new[field] - old[field] for field in old}
    return {"baseline": old, "candidate": new, "change": change}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
