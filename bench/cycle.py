"""The global cycle through the production path (DESIGN 4; issue 5).

bench/session.py times the policies session over a hand-built ``PendingIndex``; this one feeds
``FederationState`` the way the scheduler service does: every job is a real ``JobRecord`` (made by
``federation.jobs.expand``), written to bytes and parsed back, then ``upsert_job(record, revision,
raw)``; clusters come in through ``set_cluster`` and ``set_report`` with ``ClusterReport``s; usage
comes from an ``Accountant`` holding the running jobs. Then ``GlobalScheduler.plan`` is timed.

World (as session.py's global case): 100 clusters of three node shapes, mostly full, 50 running jobs
each; 100,000 pending jobs in 200 leaf queues under 20 top queues, 1,000 tenants.

Prints, next to the DESIGN 4 targets (exit 1 if one is missed):
- median cycle time (usage + plan), target <= 250 ms; and the same with 10,000 pending, for scale;
- the 10,000-pending cycle again with 500 running jobs per cluster (50,000 running; no target), where
  before each cycle ``--busy-changes`` clusters (default 10) report a changed set of running jobs,
  as job ends and starts make them do (50,000 jobs of a few hours end at several per second): the
  state keeps each cluster's running jobs and their release times, and rebuilds only these;
- scheduler-cache memory per pending job (tracemalloc: what the pending jobs leave allocated in
  FederationState: entries, pending index, raw bytes), target <= 2 KiB, with the top allocation sites;
- one job's change (upsert of a new pending job, then its removal), to show the state is incremental.

Run: .venv/bin/python bench/cycle.py [--pending 100000] [--small 10000] [--busy 500] [--busy-changes 10] [--runs 7]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import cache
from itertools import count, cycle
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from machine import speed_marker  # noqa: E402

from federation.accounting import Accountant  # noqa: E402
from federation.config import FederationConfig  # noqa: E402
from federation.jobs import expand  # noqa: E402
from federation.models import JobManifest, JobRecord, JobState, QueueTree, QueueTreeConfig  # noqa: E402
from federation.models.cluster import ClusterReport, LatestReport, NodeReport, RunningJob  # noqa: E402
from federation.scheduler.conf import global_conf  # noqa: E402
from federation.scheduler.cycle import CyclePlan, GlobalScheduler  # noqa: E402
from federation.scheduler.state import FederationState  # noqa: E402
from policies import ManualClock  # noqa: E402

GI = 1024.0**3
NOW = 1_000_000_000.0
CLUSTERS = 100
RUNNING_PER_CLUSTER = 50
FINISHED = 3_000  # past runs, so decayed usage differs between tenants that run nothing now
TOPS, LEAVES, TENANTS = 20, 200, 1_000
CYCLE_TARGET = 0.250
MEMORY_TARGET = 2048
REQUESTS = (
    {"cpu": "4", "memory": "16Gi"},
    {"cpu": "16", "memory": "64Gi"},
    {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
)


def queue_tree() -> QueueTree:
    """20 top queues (weights 1-4, a cpu guarantee each), each with 10 open leaves: 200 leaves."""
    tops = [
        {
            "name": f"top{a}",
            "weight": 1 + a % 4,
            "guarantee": {"cpu": 200},
            "children": [{"name": f"leaf{leaf}"} for leaf in range(a, LEAVES, TOPS)],
        }
        for a in range(TOPS)
    ]
    return QueueTree(QueueTreeConfig.model_validate({"queues": tops}))


def leaf(j: int) -> str:
    return f"top{j % TOPS}.leaf{j % LEAVES}"


@cache
def manifest(replicas: int, request: int, walltime: str, eu_only: bool, priority: int) -> JobManifest:
    """Validated once per distinct spec (the queue is set per job by ``in_queue``)."""
    return JobManifest.model_validate(
        {
            "metadata": {"name": "bench"},
            "spec": {
                "queue": "placeholder",
                "priority": priority,
                "walltime": walltime,
                "clusterSelector": {"region": "eu"} if eu_only else {},
                "tasks": [{"name": "w", "replicas": replicas, "resources": REQUESTS[request]}],
            },
        }
    )


def in_queue(base: JobManifest, queue: str) -> JobManifest:
    return base.model_copy(update={"spec": base.spec.model_copy(update={"queue": queue})})


def stored(record: JobRecord) -> tuple[JobRecord, bytes]:
    """The record as the service sees it: parsed from the bytes the store holds."""
    raw = record.to_bytes()
    return JobRecord.from_bytes(raw), raw


def pending_manifest(rng: random.Random, j: int) -> JobManifest:
    """The j-th pending job's manifest: its shape drawn from ``rng``, in its leaf queue (bench/scale.py
    submits these through the API)."""
    base = manifest(
        rng.choice((1, 1, 1, 2, 4)), rng.randrange(3), rng.choice(("1h", "4h")), j % 7 == 0, rng.randint(0, 5)
    )
    return in_queue(base, leaf(j))


def pending_record(rng: random.Random, j: int) -> JobRecord:
    return expand(pending_manifest(rng, j), f"tenant-{j % TENANTS}", NOW - rng.uniform(0, 86400))[0]


def cluster_report(rng: random.Random, c: int, running: list[JobRecord]) -> ClusterReport:
    """Three node shapes, mostly full, and the running jobs with their expected ends."""
    small = {"cpu": 32.0, "memory": 128 * GI}
    big = {"cpu": 64.0, "memory": 256 * GI, "nvidia.com/gpu": 8.0 if c % 5 == 0 else 0.0}
    shapes = [
        ("small-full", small, {"cpu": 0.0, "memory": 8 * GI}, 90),
        ("small-free", small, {"cpu": 8.0, "memory": 32 * GI}, rng.randint(1, 3)),
        ("big", big, {"cpu": 2.0, "memory": 8 * GI, "nvidia.com/gpu": 0.0}, 40),
    ]
    nodes = [
        NodeReport(name=f"{name}+{count - 1}", count=count, allocatable=alloc, free=free)
        for name, alloc, free, count in shapes
    ]
    runs = [
        RunningJob(
            job_id=r.id,
            epoch=r.epoch,
            resources=r.spec.total_resources(),
            started_at=r.start_time,
            expected_end=(r.start_time or NOW) + (r.spec.walltime or 0.0),
        )
        for r in running
    ]
    return ClusterReport(nodes=nodes, running=runs)


def clusters(state: FederationState, accountant: Accountant, rng: random.Random, running_per_cluster: int) -> int:
    """Joined clusters with their reports and running jobs, the accountant's runs (past and present).

    Returns the last revision used for the running jobs' records.
    """
    revision = 0
    events: list[tuple[float, int, JobRecord, str]] = []  # (time, 1 = start / 0 = stop, job, cluster)
    for k in range(FINISHED):
        start = NOW - rng.uniform(3600, 3 * 86400)
        record = expand(in_queue(manifest(1, 1, "4h", False, 0), leaf(k)), f"tenant-{rng.randrange(TENANTS)}", start)[0]
        events += [(start, 1, record, "old"), (start + rng.uniform(60, 14400), 0, record, "old")]
    for c in range(CLUSTERS):
        name = f"cluster-{c}"
        state.set_cluster(name, {"region": ("eu", "us")[c % 2]}, False)
        running = []
        for k in range(running_per_cluster):
            start = NOW - rng.uniform(60, 7200)
            spec = in_queue(manifest(1, 1, "4h", False, 0), leaf(k % LEAVES))
            submitted = expand(spec, f"tenant-{(c * running_per_cluster + k) % TENANTS}", start - 30)[0]
            update = {"state": JobState.RUNNING, "cluster": name, "epoch": 1, "start_time": start}
            record, raw = stored(submitted.model_copy(update=update))
            revision += 1
            state.upsert_job(record, revision, raw)
            running.append(record)
            events.append((start, 1, record, name))
        state.set_report(name, NOW, cluster_report(rng, c, running))
    for at, starts, record, cluster in sorted(events, key=lambda e: (e[0], e[1])):
        if starts:
            accountant.start(record.id, record.tenant, record.queue, cluster, record.spec.total_resources(), at)
        else:
            accountant.stop(record.id, at)
    return revision


def build(
    pending: int, seed: int, memory: bool, running_per_cluster: int = RUNNING_PER_CLUSTER
) -> tuple[FederationState, Accountant, list[str]]:
    """The world above; with ``memory``, what the pending jobs leave allocated (see ``memory_sites``)."""
    rng = random.Random(seed)
    config = FederationConfig()
    state = FederationState()
    state.set_queues(queue_tree())
    accountant = Accountant(ManualClock(NOW), config.fairshare.half_life, config.fairshare.usage_weights)
    revision = clusters(state, accountant, rng, running_per_cluster)
    sites: list[str] = []
    if memory:
        gc.collect()
        tracemalloc.start()
    for j in range(pending):
        record, raw = stored(pending_record(rng, j))
        revision += 1
        state.upsert_job(record, revision, raw)
    if memory:
        del record, raw
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        sites = memory_sites(snapshot, pending)
    return state, accountant, sites


def memory_sites(snapshot: tracemalloc.Snapshot, pending: int) -> list[str]:
    """Bytes per pending job in all, then the top allocation sites (innermost frame) per job."""
    stats = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]).statistics("lineno")
    lines = [f"{sum(s.size for s in stats) / pending:.0f}"]
    for stat in stats[:12]:
        frame = stat.traceback[0]
        where = "/".join(Path(frame.filename).parts[-2:])
        lines.append(
            f"    {stat.size / pending:7.0f} B/job  {stat.count / pending:5.2f} blocks/job  {where}:{frame.lineno}"
        )
    return lines


def cycles(
    state: FederationState, accountant: Accountant, runs: int, between: Callable[[], None] | None = None
) -> tuple[float, CyclePlan]:
    """Median seconds of usage + plan, as ``SchedulerService.cycle`` computes them; and the last plan.
    ``between`` runs before each cycle, untimed (what the report handler does meanwhile)."""
    scheduler = GlobalScheduler(FederationConfig(), ManualClock(NOW))
    times = []
    for _ in range(runs):
        if between is not None:
            between()
        started = time.perf_counter()
        plan = scheduler.plan(state, accountant.usage(NOW))
        times.append(time.perf_counter() - started)
    return statistics.median(times), plan


def plugin_split(state: FederationState, accountant: Accountant) -> str:
    """The slowest plugins of a cycle run with every hook call timed (the timed cycles above are not:
    production cycles do not pay for the clock reads). The second such cycle is shown: the first
    builds the timed plugin set, whose plugins start with empty caches."""
    config = FederationConfig()
    scheduler = GlobalScheduler(config, ManualClock(NOW), dataclasses.replace(global_conf(config), hook_timing=True))
    for _ in range(2):
        plan = scheduler.plan(state, accountant.usage(NOW))
    slowest = sorted(plan.plugin_seconds.items(), key=lambda kv: -kv[1])[:6]
    split = ", ".join(f"{name} {secs * 1000:.0f} ms" for name, secs in slowest)
    return f"{split} (that cycle: {plan.seconds * 1000:.0f} ms)"


def changing_reports(state: FederationState, per_cycle: int) -> Callable[[], None]:
    """Each call, the next ``per_cycle`` clusters report their running jobs with one expected end moved,
    as when one job ends and another starts in its place."""
    names = cycle(sorted(state.clusters))
    shift = count(1)

    def report() -> None:
        for _ in range(per_cycle):
            view = state.clusters[next(names)]
            running = sorted((job, epoch, view.expected_end.get(job)) for job, epoch in view.reported_running)
            if running:
                job, epoch, end = running[0]
                running[0] = (job, epoch, (end or NOW) + next(shift))
            state.set_latest(
                view.name,
                LatestReport.model_construct(time=NOW, nodes=cast(list[NodeReport], list(view.nodes)), running=running),
            )

    return report


def job_change(state: FederationState, count: int = 1_000) -> float:
    """Seconds for one new pending job's upsert and then its removal (records parsed beforehand)."""
    rng = random.Random(99)
    records = [stored(pending_record(rng, j)) for j in range(count)]
    revision = 10**9
    started = time.perf_counter()
    for record, raw in records:
        revision += 1
        state.upsert_job(record, revision, raw)
        state.remove_job(record.id)
    return (time.perf_counter() - started) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="pending jobs of the comparison world")
    parser.add_argument("--busy", type=int, default=500, help="running jobs per cluster of the busy comparison world")
    parser.add_argument(
        "--busy-changes", type=int, default=10, help="clusters whose running jobs change between busy cycles"
    )
    parser.add_argument("--runs", type=int, default=7, help="cycles timed per world")
    args = parser.parse_args()
    print(speed_marker(), flush=True)

    small_state, small_accountant, _ = build(args.small, 1, memory=False)
    small_cycle, _ = cycles(small_state, small_accountant, args.runs)
    del small_state, small_accountant
    busy_state, busy_accountant, _ = build(args.small, 1, memory=False, running_per_cluster=args.busy)
    busy_cycle, _ = cycles(busy_state, busy_accountant, args.runs, changing_reports(busy_state, args.busy_changes))
    del busy_state, busy_accountant

    started = time.perf_counter()
    state, accountant, sites = build(args.pending, 1, memory=True)
    built = time.perf_counter() - started
    per_job = float(sites[0])
    cycle, plan = cycles(state, accountant, args.runs)
    change = job_change(state)

    print(f"state fed with {args.pending:,} pending jobs (expand, to_bytes, from_bytes, upsert_job): {built:.1f} s")
    print(f"one job's change (upsert of a new pending job + remove): {change * 1e6:.1f} us")
    print(f"global cycle, {args.small:,} pending (for comparison): median {small_cycle * 1000:.0f} ms")
    print(
        f"global cycle, {args.small:,} pending and {args.busy * CLUSTERS:,} running, {args.busy_changes} clusters "
        f"changed before each (for scale, no target): median {busy_cycle * 1000:.0f} ms"
    )
    print(
        f"global cycle, {args.pending:,} pending, {LEAVES} leaf queues, {TENANTS:,} tenants, {CLUSTERS} clusters: "
        f"median {cycle * 1000:.0f} ms of {args.runs}   target <= 250 ms   "
        f"({len(plan.dispatches)} dispatched, {len(plan.reservations)} reserved, "
        f"{len(plan.reasons):,} with reasons)"
    )
    print("  plugin seconds (a warm cycle run with hookTiming): " + plugin_split(state, accountant))
    print(f"scheduler-cache memory: {per_job:,.0f} B per pending job   target <= {MEMORY_TARGET:,} B")
    print("  top allocation sites of the pending jobs:")
    print("\n".join(sites[1:]))
    ok = cycle <= CYCLE_TARGET and per_job <= MEMORY_TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
