"""Session benchmarks (DESIGN 4): run with `.venv/bin/python bench/session.py`.

1. Local: one allocate cycle of the default local conf, 10,000 pending tasks on 1,000 nodes
   (mixed node and task sizes, gangs, 50 queues). Target: <= 1 s.
2. Global: one cycle of the default global conf over 100 clusters (node-shape summaries, mostly
   full), with 100,000 pending jobs in 200 leaf queues and 1,000 tenants held in a PendingIndex
   across cycles. Target: <= 250 ms. Also the cost of one job's change to the index.
Prints medians next to the targets; exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policies import (  # noqa: E402
    JobInfo,
    ManualClock,
    NodeInfo,
    NodeShape,
    PendingIndex,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
    Usage,
    close_session,
    load_conf,
    open_session,
)

GI = 1024.0**3
NOW = 1_000_000.0


def local_world(rng: random.Random, tasks: int = 10_000, nodes: int = 1_000, queues: int = 50) -> Snapshot:
    shapes = [({"cpu": 16.0, "memory": 64 * GI}, 0.4), ({"cpu": 32.0, "memory": 128 * GI}, 0.4)]
    shapes.append(({"cpu": 64.0, "memory": 256 * GI, "nvidia.com/gpu": 8.0}, 0.2))
    node_list = []
    for i in range(nodes):
        alloc = rng.choices([s for s, _ in shapes], weights=[w for _, w in shapes])[0]
        node_list.append(NodeInfo(f"node-{i}", dict(alloc), labels={"zone": f"z{i % 4}"}))
    sizes = [
        {"cpu": 1.0, "memory": 2 * GI},
        {"cpu": 2.0, "memory": 8 * GI},
        {"cpu": 4.0, "memory": 16 * GI},
        {"cpu": 8.0, "memory": 32 * GI},
        {"cpu": 8.0, "memory": 64 * GI, "nvidia.com/gpu": 1.0},
    ]
    jobs = []
    made = 0
    j = 0
    while made < tasks:
        n = min(rng.choice([1, 1, 2, 4, 8, 16]), tasks - made)
        size = rng.choice(sizes)
        jid = f"job-{j}"
        selector = {"zone": f"z{j % 4}"} if j % 10 == 0 else {}
        jobs.append(
            JobInfo(
                jid,
                f"q{j % queues // 10}.leaf{j % queues}",
                f"tenant-{j % 200}",
                priority=rng.randint(0, 3),
                submit_time=NOW - rng.uniform(0, 3600),
                min_available=n if j % 3 else 1,
                walltime=rng.choice([600.0, 3600.0, None]),
                cluster_selector=selector,
                tasks=[TaskInfo(jid, "w", k, dict(size)) for k in range(n)],
            )
        )
        made += n
        j += 1
    qs = {
        f"q{a}.leaf{a * 10 + b}": QueueInfo(f"q{a}.leaf{a * 10 + b}", weight=1 + b % 3)
        for a in range(5)
        for b in range(10)
    }
    return Snapshot(node_list, jobs, qs)


def bench_local(runs: int) -> tuple[float, float, int]:
    conf = load_conf(ROOT / "configs" / "scheduler.yaml")
    cycles, allocs = [], []
    binds = 0
    for r in range(runs):
        world = local_world(random.Random(r))
        t0 = time.perf_counter()
        ssn = open_session(conf, world, ManualClock(NOW))
        ssn.run()
        d = close_session(ssn)
        cycles.append(time.perf_counter() - t0)
        allocs.append(d.action_seconds["allocate"])
        binds = len(d.binds)
    return statistics.median(cycles), statistics.median(allocs), binds


def global_world(rng: random.Random, pending: int, clusters: int = 100) -> tuple[Snapshot, PendingIndex]:
    nodes, running = [], []
    for c in range(clusters):
        big = {"cpu": 64.0, "memory": 256 * GI, "nvidia.com/gpu": 8.0 if c % 5 == 0 else 0.0}
        small = {"cpu": 32.0, "memory": 128 * GI}
        shapes = [
            NodeShape(small, {"cpu": 0.0, "memory": 8 * GI}, 90),  # mostly full
            NodeShape(small, {"cpu": 8.0, "memory": 32 * GI}, rng.randint(0, 3)),
            NodeShape(big, {"cpu": 2.0, "memory": 8 * GI, "nvidia.com/gpu": 0.0}, 40),
        ]
        nodes.append(NodeInfo(f"cluster-{c}", {}, shapes=shapes, labels={"region": ["eu", "us"][c % 2]}))
        for k in range(50):
            jid = f"run-{c}-{k}"
            task = TaskInfo(
                jid,
                "w",
                0,
                {"cpu": 32.0, "memory": 64 * GI},
                TaskStatus.RUNNING,
                f"cluster-{c}",
                NOW + rng.uniform(60, 7200),
                NOW - 60,
            )
            running.append(JobInfo(jid, f"top{k % 20}.leaf{k % 200}", f"tenant-{k}", tasks=[task], start_time=NOW - 60))
    index = PendingIndex()
    for j in range(pending):
        jid = f"pend-{j}"
        n = rng.choice([1, 1, 1, 2, 4])
        req = rng.choice(
            [
                {"cpu": 4.0, "memory": 16 * GI},
                {"cpu": 16.0, "memory": 64 * GI},
                {"cpu": 8.0, "memory": 32 * GI, "nvidia.com/gpu": 1.0},
            ]
        )
        index.add(
            JobInfo(
                jid,
                f"top{j % 20}.leaf{j % 200}",
                f"tenant-{j % 1000}",
                priority=rng.randint(0, 5),
                submit_time=NOW - rng.uniform(0, 86400),
                walltime=rng.choice([3600.0, 14400.0]),
                cluster_selector={"region": "eu"} if j % 7 == 0 else {},
                tasks=[TaskInfo(jid, "w", k, dict(req)) for k in range(n)],
            )
        )
    queues = {f"top{a}": QueueInfo(f"top{a}", weight=1 + a % 4, guarantee={"cpu": 200.0}) for a in range(20)}
    usage = Usage(
        queue_rup={q: rng.uniform(1, 500) for q in queues},
        tenant_rup={f"tenant-{t}": rng.uniform(0.5, 50) for t in range(1000)},
    )
    return Snapshot(nodes, running, queues, usage, index), index


def bench_global(runs: int, pending: int) -> tuple[float, float, float, int]:
    conf = load_conf(ROOT / "configs" / "scheduler-global.yaml")
    rng = random.Random(7)
    t0 = time.perf_counter()
    snapshot, index = global_world(rng, pending)
    build = time.perf_counter() - t0
    cycles = []
    dispatched = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        ssn = open_session(conf, snapshot, ManualClock(NOW))
        ssn.run()
        d = close_session(ssn)
        cycles.append(time.perf_counter() - t0)
        dispatched = len(d.bound_jobs())
    # One job's change: remove and re-add 1,000 jobs (priority bumped), timed per change.
    ids = [f"pend-{j}" for j in range(0, pending, pending // 1000)]
    t0 = time.perf_counter()
    for jid in ids:
        job = index.remove(jid)
        assert job is not None
        job.priority += 1
        index.add(job)
    per_change = (time.perf_counter() - t0) / len(ids)
    return statistics.median(cycles), build, per_change, dispatched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pending", type=int, default=100_000)
    args = parser.parse_args()
    ok = True
    cycle, alloc, binds = bench_local(args.runs)
    print(
        f"local  session cycle (enqueue, allocate, preempt, backfill), 10,000 tasks x 1,000 nodes: median {cycle:.3f} s"
    )
    print(f"local  allocate action alone: median {alloc:.3f} s   target <= 1 s   ({binds} tasks bound)")
    ok &= cycle <= 1.0
    gcycle, build, change, dispatched = bench_global(args.runs, args.pending)
    print(f"global index build, {args.pending:,} pending jobs: {build:.2f} s (once; then incremental)")
    print(f"global one job's change to the index (remove + add): {change * 1e6:.1f} us")
    print(
        f"global cycle, {args.pending:,} pending, 200 queues, 1,000 tenants, 100 clusters: "
        f"median {gcycle * 1000:.0f} ms   target <= 250 ms   ({dispatched} jobs placed)"
    )
    ok &= gcycle <= 0.25
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
