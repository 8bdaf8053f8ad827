"""Dispatch through real etcd, end to end (DESIGN 4; issue 5).

N pending jobs are written with ``JobRepository.create``; clusters join with single-use tokens and
report their capacity through ``ClusterService``; then the real ``SchedulerService`` (leader lease,
one snapshot load, watch) cycles until every job is Dispatched. Each dispatch is one CAS change:
the job record, its index entry moved (put + delete) and the cluster's assignment key, 4 keys and
one compare per job, batched into txns under the leader fence. The timed window is from the first
cycle to the state (and, via ``sync``, the watch) holding every job as Dispatched.

Raw etcd batched-txn throughput is measured in the same run, before and after the dispatch, and the
better of the two is the denominator:

- for the target, etcd's throughput for the dispatch's own txns: the same number of jobs per txn
  (etcd's op limit / 4), per job one compare and the same puts and delete with the same value sizes
  (taken from a real dispatch change), 4 txns in flight; so the ratio says how much of what etcd can
  take for this work the scheduler achieves (planning, building changes, following its watch);
- for reference, plain 512 B puts in full 128-op txns (bench/etcd_raw.py), compared in keys/s.

Prints jobs/s (target >= 2,000), jobs/s / raw jobs/s (target >= 0.5), the keys/s comparison, the
cycles and their planning time; exits 1 if a target is missed. A scheduler whose every cycle
outlasts its lease dispatches nothing, ever: after 3 such depositions in a row the run stops as
STALLED and the rate is what was dispatched until then. ``--profile`` runs the dispatch
phase under cProfile and prints the top functions (the rates are then not the figures to quote).

Run: .venv/bin/python bench/dispatch.py [--jobs 20000] [--raw 50000] [--leader-ttl 5] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from etcd_raw import raw_change_rate, raw_txn_put_rate  # noqa: E402
from gctime import CollectorTime  # noqa: E402
from machine import speed_marker  # noqa: E402

from federation import keys  # noqa: E402
from federation.auth import Role, TokenStore  # noqa: E402
from federation.clusters import ClusterService  # noqa: E402
from federation.config import FederationConfig  # noqa: E402
from federation.jobs import JobRepository, StoredJob, change_of, expand  # noqa: E402
from federation.lifecycle import Dispatch, transition  # noqa: E402
from federation.logs import configure_logging  # noqa: E402
from federation.models import JobManifest, JobRecord, JobState, QueueTreeConfig  # noqa: E402
from federation.models.cluster import ClusterReport, JoinRequest, NodeReport  # noqa: E402
from federation.scheduler.cycle import CyclePlan  # noqa: E402
from federation.scheduler.dispatch import Deposed  # noqa: E402
from federation.scheduler.service import SchedulerService  # noqa: E402
from federation.store import EtcdServer, EtcdStore, Op, Store  # noqa: E402
from policies import ManualClock  # noqa: E402

GI = 1024.0**3
KEYS_PER_DISPATCH = 4  # record, index put, old index delete, assignment
TOPS, LEAVES_PER_TOP, TENANTS = 4, 5, 100
NODES_PER_CLUSTER = 100
JOBS_TARGET = 2_000
RATIO_TARGET = 0.5
STUCK_LIMIT = 3  # depositions in a row without progress: the scheduler is livelocked


def queues() -> QueueTreeConfig:
    return QueueTreeConfig.model_validate(
        {
            "queues": [
                {"name": f"top{a}", "weight": 1 + a, "children": [{"name": f"leaf{b}"} for b in range(LEAVES_PER_TOP)]}
                for a in range(TOPS)
            ]
        }
    )


def pending_jobs(count: int, now: float) -> list[JobRecord]:
    """One-task jobs (1 cpu, 2 GiB) spread over every leaf queue and ``TENANTS`` tenants."""
    manifests = [
        JobManifest.model_validate(
            {
                "metadata": {"name": "bench"},
                "spec": {
                    "queue": f"top{a}.leaf{b}",
                    "priority": b % 3,
                    "walltime": "1h",
                    "tasks": [{"resources": {"cpu": "1", "memory": "2Gi"}}],
                },
            }
        )
        for a in range(TOPS)
        for b in range(LEAVES_PER_TOP)
    ]
    return [expand(manifests[i % len(manifests)], f"tenant-{i % TENANTS}", now - i * 1e-3)[0] for i in range(count)]


def capacity() -> list[NodeReport]:
    """One idle node shape of 32 cpu / 128 GiB per cluster."""
    return [
        NodeReport(
            name=f"node+{NODES_PER_CLUSTER - 1}",
            count=NODES_PER_CLUSTER,
            allocatable={"cpu": 32.0, "memory": 128 * GI},
            free={"cpu": 32.0, "memory": 128 * GI},
        )
    ]


def dispatch_template(now: float) -> list[Op]:
    """The ops of one real dispatch change (record, index put and delete, assignment), for their sizes."""
    record = pending_jobs(1, now)[0]
    stored = StoredJob(record, 1)
    outcome = transition(record, Dispatch("cluster-0"), now)
    assert outcome is not None
    return change_of(stored, outcome).ops


async def raw_rates(store: Store, args: argparse.Namespace, max_txn_ops: int) -> tuple[float, float]:
    """(plain puts/s, dispatch-shaped jobs/s), raw etcd measured now."""
    template = dispatch_template(time.time())
    per_txn = max_txn_ops // len(template)
    return await raw_txn_put_rate(store, args.raw), await raw_change_rate(store, args.jobs, template, per_txn)


async def join_clusters(store: Store, jobs: int, clock: ManualClock, clusters: int | None = None) -> int:
    """Join clusters (single-use join tokens) with room for every job and half again, or ``clusters`` of
    them; returns how many."""
    repository = JobRepository(store)
    tokens = TokenStore(store, clock)
    service = ClusterService(store, repository, tokens, clock)
    if clusters is None:
        clusters = -(-3 * jobs // (2 * 32 * NODES_PER_CLUSTER))
    for c in range(clusters):
        name = f"cluster-{c}"
        token = await tokens.issue(Role.JOIN, name)
        await service.join(JoinRequest(token=token, name=name, labels={"region": ("eu", "us")[c % 2]}))
        await service.report(name, ClusterReport(nodes=capacity()))
    return clusters


@dataclass
class Dispatched:
    seconds: float
    cpu_seconds: float  # this process's CPU time in the window: the scheduler's own work, not etcd's
    dispatched: int
    plans: list[CyclePlan]  # the cycles that completed
    collector: CollectorTime  # the garbage collector's passes in the window
    depositions: int
    lease_ttl: float
    profile: cProfile.Profile | None


async def lead(service: SchedulerService) -> None:
    """Hold the lease as ``SchedulerService.run`` does; after a deposition its next turn notices the
    lost lease and the one after takes a new one (over the state it kept following)."""
    await service.follow()
    for _ in range(2):
        if await service.lead():
            return
    raise RuntimeError("could not become the leader")


async def dispatch_all(service: SchedulerService, profile: bool) -> Dispatched:
    """Cycle until no job is left pending, then sync; a deposition is handled as ``run`` handles it.

    Stops early, as stalled, after ``STUCK_LIMIT`` depositions in a row that dispatched nothing.
    """
    profiler = cProfile.Profile() if profile else None
    plans: list[CyclePlan] = []
    depositions = stuck = 0
    cut_short_at: int | None = None  # jobs pending when the last cycle was cut short
    if profiler is not None:
        profiler.enable()
    with CollectorTime() as collector:
        started = time.perf_counter()
        cpu_started = time.process_time()
        while True:
            await lead(service)
            assert service.state is not None
            pending = len(service.state.pending)
            if cut_short_at is not None:
                stuck = stuck + 1 if pending >= cut_short_at else 0
                cut_short_at = None
            if not pending or stuck == STUCK_LIMIT:
                break
            try:
                plan = await service.cycle()
            except Deposed:
                depositions += 1
                cut_short_at = pending
                service.stand_by()
                continue
            plans.append(plan)
            if not plan.dispatches:
                raise RuntimeError(f"a cycle dispatched nothing with {len(service.state.pending)} jobs pending")
        await service.sync()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    if profiler is not None:
        profiler.disable()
    dispatched = sum(entry.state is JobState.DISPATCHED for entry in service.state.entries.values())
    return Dispatched(elapsed, cpu, dispatched, plans, collector, depositions, service.election.ttl, profiler)


async def run(args: argparse.Namespace, work: Path) -> tuple[list[tuple[float, float]], Dispatched, int]:
    with EtcdServer(work / "etcd", quota_backend_bytes=8 * 1024**3, secure=False) as etcd:
        store = EtcdStore(etcd.endpoint)
        try:
            raws = [await raw_rates(store, args, store.max_txn_ops)]
            clock = ManualClock(time.time())
            await store.put(keys.QUEUES, queues().model_dump_json(by_alias=True).encode())
            await JobRepository(store).create(pending_jobs(args.jobs, clock.now()))
            clusters = await join_clusters(store, args.jobs, clock)
            service = SchedulerService(store, FederationConfig(), clock, leader_ttl=args.leader_ttl)
            await lead(service)
            result = await dispatch_all(service, args.profile)
            stored = (await store.snapshot(keys.index_prefix(JobState.DISPATCHED.value))).kvs
            if len(stored) != result.dispatched:
                raise RuntimeError(
                    f"the store's index lists {len(stored)} jobs as Dispatched, the state {result.dispatched}"
                )
            await service.close()
            raws.append(await raw_rates(store, args, store.max_txn_ops))
            return raws, result, clusters
        finally:
            await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--raw", type=int, default=50_000, help="puts per raw batched-txn measurement")
    parser.add_argument(
        "--leader-ttl",
        type=float,
        default=5.0,
        help="the scheduler's lease (fedq server: 5 s); longer hides depositions",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the dispatch phase, print the top items")
    args = parser.parse_args()
    configure_logging("warning")  # per-job info lines would be timed with the work
    print(speed_marker(), flush=True)
    work = Path(tempfile.mkdtemp(prefix="fedq-bench-dispatch-"))
    raws, result, clusters = asyncio.run(run(args, work))
    raw_puts = max(r[0] for r in raws)
    raw_jobs = max(r[1] for r in raws)
    rate = result.dispatched / result.seconds
    plans = result.plans
    planning = sum(plan.seconds for plan in plans)
    print(
        f"raw etcd, the dispatch's own txns ({KEYS_PER_DISPATCH} keys + 1 compare per job, full txns, 4 in flight): "
        f"{raws[0][1]:,.0f} jobs/s before, {raws[1][1]:,.0f} after"
    )
    print(f"raw etcd, 512 B puts in 128-op txns, 4 in flight: {raws[0][0]:,.0f} puts/s before, {raws[1][0]:,.0f} after")
    print(
        f"dispatched {result.dispatched:,} of {args.jobs:,} jobs to {clusters} clusters in {result.seconds:.2f} s: "
        f"{len(plans)} cycles completed, planning {planning:.2f} s of it"
        + (f" (median {statistics.median(p.seconds for p in plans) * 1000:.0f} ms)" if plans else "")
    )
    per_job = 1e6 / max(1, result.dispatched)
    print(
        f"  the scheduler's process was busy {result.cpu_seconds:.2f} s of it ({result.cpu_seconds * per_job:.0f} us "
        f"per job; planning {planning * per_job:.0f} us); raw etcd takes {1e6 / raw_jobs:.0f} us per job for its txns"
    )
    print(f"  {result.collector} of it")
    if result.depositions:
        print(
            f"  the leader lease ({result.lease_ttl:g} s) ran out during a cycle {result.depositions} time(s): "
            "the commit was cut short (Deposed) and the lease taken again, as SchedulerService.run does"
        )
    if result.dispatched < args.jobs:
        print(f"  STALLED: {STUCK_LIMIT} depositions in a row dispatched nothing (every cycle outlasts the lease)")
    print(f"dispatch through etcd: {rate:,.0f} jobs/s   target >= {JOBS_TARGET:,}")
    print(f"  vs raw etcd on the same txns: {rate / raw_jobs:.2f} x   target >= {RATIO_TARGET}")
    print(
        f"  in keys: {rate * KEYS_PER_DISPATCH:,.0f} keys/s = "
        f"{rate * KEYS_PER_DISPATCH / raw_puts:.2f} x raw 512 B puts/s  (for reference)"
    )
    if result.profile is not None:
        print("profile of the dispatch phase (rates above are slowed by the profiler):")
        stats = pstats.Stats(result.profile, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(25)
    done = result.dispatched == args.jobs
    return 0 if done and rate >= JOBS_TARGET and rate / raw_jobs >= RATIO_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
