"""A federation at N queued jobs on a three-member etcd (issue 35): every figure the issue asks for, at
each ``--jobs`` size in one run, and each figure's ratio of the largest size to the smallest beside its
target.

Per size, on a fresh etcd cluster of ``--members`` members on loopback (plain HTTP, an 8 GiB quota):

1. A real ``fedq server`` (API and its scheduler child, as bench/submit.py starts it) over bench/cycle.py's
   queue tree (200 leaves under 20 tops). Each of ``--tenants`` tenants (1,000) submits one job with its
   own token, ``--in-flight`` at once: **a tenant's first submit** on a replica, which sums its quota
   usage (no target: a cost per tenant, not per store). Then N jobs of bench/cycle.py's mix, each tenant's
   share in requests of ``--batch`` of its own, tenant after tenant, ``--in-flight`` requests at once:
   **bulk submit** (jobs/s over the whole N; the last tenth's rate is printed too). The scheduler leads
   from the start; its **lost leader leases** during these submits are counted from its log ("lost
   leadership"). Then ``--singles`` sequential single submits of one tenant: **single submit p99**.
2. Against that server (medians of ``--runs``, bench/list.py's helpers): the **first page** and the
   **100th page** of ``GET /v1/jobs`` (an earlier page when N has fewer), **a tenant's first page**,
   ``GET /v1/queues``, one **explain**, and an admin's **quota report** (``GET /v1/reports/quota``).
3. The server stops (its scheduler resigns) and a new ``fedq server`` is spawned: **cold start** is from
   the spawn to its scheduler's first cycle, seen as its first write of ``status/scheduler``.
4. A stand-by ``SchedulerService`` in this process loads the store under tracemalloc: **scheduler
   memory per pending job** (bench/cycle.py's measure, which the 1.6 KiB target is of; the cold
   scheduler process's RSS per pending job is printed beside it). The cold server is then SIGKILLed and
   **warm takeover** is from the kill to the stand-by leading (the lease's TTL, then ``lead()``, which is
   also printed alone), as bench/takeover.py measures it.
5. The stand-by leads: 100 clusters join (bench/dispatch.py's ``join_clusters``) and report bench/cycle.py's
   mostly full nodes; **global cycle** is the median of ``--runs`` production cycles
   (``SchedulerService.cycle``: the turn, its commit, status, upkeep). Then every cluster reports room
   and cycles run until ``--dispatch`` jobs are dispatched: **dispatch** (jobs/s, the watch caught up).
6. **etcd's database size** (the store's member space API: the largest member) and, last, **restoring a
   killed member**: one etcd follower (the only member with ``--members 1``) is SIGKILLed and started
   again on its data dir, timed until it answers a linearizable read through itself alone (etcd's
   /health is one: it has caught up with the leader's commit index).

Memory (2026-12-04, three members, after the submits, etcd with ``--snapshot-count=10000``): etcd 2.32 + 2.22
+ 2.27 GiB resident at 1,000,000 jobs, the cold scheduler process 1.71 GiB; the whole run at 1,000,000 fits the
24 GiB machine (13 GiB were still available). The whole run of both sizes takes about 20 minutes.

``--profile DIR`` explains the figures that miss: a py-spy profile of the cold server's process tree from
its spawn to its first cycle (summed per function and printed), a cProfile of the dispatch cycles, and the
servers' logs (each lost leader lease is logged there), all kept in DIR.

Run: .venv/bin/python bench/scale.py [--jobs 100000 1000000] [--members 3] [--tenants 1000] [--batch 100]
     [--in-flight 4] [--singles 300] [--runs 7] [--dispatch 20000] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cycle import CLUSTERS, TENANTS, cluster_report, pending_manifest, queue_tree  # noqa: E402
from dispatch import join_clusters  # noqa: E402
from list import median_of, run_in_temp_dir, timed  # noqa: E402
from machine import speed_marker  # noqa: E402
from profiles import Sampled, profiled  # noqa: E402

from federation import keys  # noqa: E402
from federation.auth import TokenStore  # noqa: E402
from federation.clusters import ClusterService  # noqa: E402
from federation.config import FederationConfig  # noqa: E402
from federation.jobs import JobRepository  # noqa: E402
from federation.launcher import ServerProcess  # noqa: E402
from federation.logs import configure_logging  # noqa: E402
from federation.models.cluster import ClusterReport, NodeReport  # noqa: E402
from federation.scheduler.service import SchedulerService  # noqa: E402
from federation.store import EtcdCluster, EtcdStore, Store  # noqa: E402
from policies import ManualClock  # noqa: E402

ADMIN = "fedq_admin_bench-scale"
GI = 1024**3
ETCD_QUOTA = 8 * GI  # etcd's suggested maximum
SETTINGS = {"store": {"budgetBytes": "7Gi"}}  # the shipped 1,536 MiB budget refuses submits near 500,000 jobs
LOST = "lost leadership"  # what federation/leader.py logs once per lost lease
LATER_PAGE = 100
BENCH_KEY = "bench/scale"
LEASE_TTL = 5.0  # fedq server's scheduler lease (SchedulerService's default): a takeover waits it out


@dataclass(frozen=True)
class Figure:
    """How a figure is shown and checked: ``check`` takes its values by size, smallest first."""

    unit: str  # ms (held in seconds), s, jobs/s, B, MiB, count
    target: str = "no target"
    check: Callable[[list[float]], bool] | None = None


def ratio_at_most(bound: float) -> Figure:
    return Figure("ms", f"ratio <= {bound:g}x", lambda v: len(v) < 2 or v[-1] / v[0] <= bound)


def rate_ratio_at_least(bound: float) -> Figure:
    return Figure("jobs/s", f"ratio >= {bound:g}x", lambda v: len(v) < 2 or v[-1] / v[0] >= bound)


def each_at_most(unit: str, bound: float, shown: str) -> Figure:
    return Figure(unit, f"each <= {shown}", lambda v: max(v) <= bound)


def figures(leader_ttl: float) -> dict[str, Figure]:
    """Every figure in print order, with issue 35's target."""
    return {
        "a tenant's first submit (median)": Figure("ms"),
        "bulk submit": rate_ratio_at_least(0.8),
        "single submit p50": Figure("ms"),
        "single submit p99": each_at_most("ms", 0.050, "50 ms"),
        "lost leader leases during the burst": each_at_most("count", 0, "0"),
        "first page": ratio_at_most(1.5),
        f"page {LATER_PAGE}": Figure("ms"),
        "a tenant's first page": ratio_at_most(1.5),
        "GET /v1/queues": ratio_at_most(1.5),
        "explain": ratio_at_most(1.5),
        "quota report": Figure("ms"),
        "cold start (spawn to first cycle)": each_at_most("s", 30.0, "30 s"),
        "scheduler memory per pending job": each_at_most("B", 1.6 * 1024, "1.6 KiB"),
        "warm takeover": each_at_most("s", leader_ttl + 1.0, f"TTL + 1 s = {leader_ttl + 1:g} s"),
        "lead() alone": Figure("ms"),
        "global cycle (median)": Figure("ms", "ratio <= 2x", lambda v: len(v) < 2 or v[-1] / v[0] <= 2.0),
        "dispatch": rate_ratio_at_least(0.8),
        "etcd database size": Figure("MiB"),
        "restore a killed member": Figure("s"),
    }


FIGURES = figures(LEASE_TTL)


def shown(unit: str, value: float) -> str:
    if unit == "ms":
        return f"{value * 1000:,.0f} ms"
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "MiB":
        return f"{value / 2**20:,.0f} MiB"
    if unit == "count":
        return f"{value:,.0f}"
    return f"{value:,.0f} {unit}"


# ---- resident memory, for deciding how many members fit ------------------------------------------------


def rss(pid: int) -> int:
    """A process's resident bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def memory_line(etcd: EtcdCluster, server: ServerProcess) -> str:
    members = [rss(m.process.pid) for m in etcd.members if m.process is not None]
    api = server.process.pid if server.process is not None else 0
    scheduler = sum(rss(child) for child in children(api))
    return (
        f"resident: etcd {' + '.join(f'{b / GI:.2f}' for b in members)} GiB, API {rss(api) / GI:.2f} GiB, "
        f"its scheduler {scheduler / GI:.2f} GiB, this process {rss(os.getpid()) / GI:.2f} GiB; "
        f"the machine has {available() / GI:.1f} GiB available"
    )


# ---- the steps -------------------------------------------------------------------------------------


def bodies(count: int, batch: int, tenants: int) -> list[tuple[str, bytes]]:
    """(tenant, request body) per bulk request: bench/cycle.py's jobs, job j of tenant ``j % tenants`` as
    there (so with 1,000 tenants each has one leaf queue: the ordering's cost follows the tenant and leaf
    pairs), each tenant's jobs in requests of their own, one tenant after another (a tenant whose quota
    sum is older than ``federation.quotas.USAGE_FRESH_FOR`` has it redone beside its submit: a read of its
    own index per unfinished state)."""
    rng = random.Random(1)
    made = []
    for t in range(tenants):
        share = range(t, count, tenants)
        for first in range(0, len(share), batch):
            docs = [
                pending_manifest(rng, j).model_dump(mode="json", by_alias=True, exclude_defaults=True)
                for j in share[first : first + batch]
            ]
            made.append((f"tenant-{t}", json.dumps({"jobs": docs}).encode()))
    return made


def single(rng: random.Random, j: int) -> bytes:
    return pending_manifest(rng, j).model_dump_json(by_alias=True, exclude_defaults=True).encode()


async def tenant_tokens(http: httpx.AsyncClient, tenants: int, in_flight: int) -> dict[str, str]:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    names = iter(f"tenant-{t}" for t in range(tenants))
    tokens: dict[str, str] = {}

    async def issue() -> None:
        for name in names:
            response = await http.post(f"/v1/tenants/{name}/tokens", headers=admin)
            response.raise_for_status()
            tokens[name] = response.json()["token"]

    await asyncio.gather(*(issue() for _ in range(in_flight)))
    return tokens


async def send(
    http: httpx.AsyncClient, requests: list[tuple[str, bytes]], in_flight: int
) -> tuple[float, list[float], list[float]]:
    """Each (token, body) POSTed to /v1/jobs, ``in_flight`` at once: (when the first was sent, each one's
    latency, when each one was answered)."""
    work = iter(enumerate(requests))
    latencies = [0.0] * len(requests)
    answered = [0.0] * len(requests)

    async def sender() -> None:
        for k, (token, body) in work:
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            sent = time.perf_counter()
            (await http.post("/v1/jobs", content=body, headers=headers)).raise_for_status()
            answered[k] = time.perf_counter()
            latencies[k] = answered[k] - sent

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(in_flight)))
    return started, latencies, answered


def p99(values: list[float]) -> float:
    return sorted(values)[int(0.99 * (len(values) - 1))]


async def reads(
    http: httpx.AsyncClient, token: str, count: int, args: argparse.Namespace, note: Callable[[str, float], None]
) -> None:
    """The listing, queue view, explain and quota report figures (medians of ``--runs``; one report)."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    tenant = {"Authorization": f"Bearer {token}"}
    first = {"limit": args.limit}
    note("first page", await median_of(args.runs, lambda: http.get("/v1/jobs", params=first, headers=admin)))
    later = min(LATER_PAGE, -(-count // args.limit))
    params: dict[str, str | int] = dict(first)
    for _ in range(later - 1):
        params["continue"] = (await timed(http, admin, params))[1]["continue"]
    if later < LATER_PAGE:
        print(f"  (page {LATER_PAGE} timed as page {later}, the last of {count:,} jobs)")
    note(f"page {LATER_PAGE}", await median_of(args.runs, lambda: http.get("/v1/jobs", params=params, headers=admin)))
    items = (await timed(http, tenant, first))[1]["items"]
    note(
        "a tenant's first page", await median_of(args.runs, lambda: http.get("/v1/jobs", params=first, headers=tenant))
    )
    note("GET /v1/queues", await median_of(args.runs, lambda: http.get("/v1/queues", headers=admin)))
    pending = next(item["id"] for item in items if item["state"] == "Pending")
    note("explain", await median_of(args.runs, lambda: http.get(f"/v1/jobs/{pending}/explain", headers=tenant)))
    # once: it reads every job's record, past several minutes at 1,000,000 jobs (2026-12-04)
    note("quota report", await median_of(1, lambda: http.get("/v1/reports/quota", headers=admin)))


async def next_put(store: Store, key: str, after: int) -> None:
    """Return at the first put of ``key`` after revision ``after``."""
    async with aclosing(store.watch(key, start_revision=after + 1)) as events:
        async for event in events:
            if event.key == key and event.type == "put":
                return


async def next_delete(store: Store, key: str, after: int) -> None:
    async with aclosing(store.watch(key, start_revision=after + 1)) as events:
        async for event in events:
            if event.key == key and event.type == "delete":
                return


def roomy() -> ClusterReport:
    """Room for every job shape of bench/cycle.py (gpus included), far more than ``--dispatch`` takes."""
    node = {"cpu": 64.0, "memory": 256.0 * GI, "nvidia.com/gpu": 8.0}
    return ClusterReport(nodes=[NodeReport(name="roomy+199", count=200, allocatable=node, free=node)])


async def dispatch_until(service: SchedulerService, wanted: int) -> tuple[int, float, int]:
    """Cycles until ``wanted`` jobs are dispatched (or one dispatches nothing): (jobs, seconds, cycles),
    the watch caught up with the last."""
    dispatched = cycles = 0
    started = time.perf_counter()
    while dispatched < wanted:
        plan = await service.cycle()
        cycles += 1
        if not plan.dispatches:
            break
        dispatched += len(plan.dispatches)
    await service.sync()
    return dispatched, time.perf_counter() - started, cycles


class Run:
    """One size's federation: its etcd, its servers, the bench's own store client and stand-by."""

    def __init__(self, args: argparse.Namespace, count: int, work: Path) -> None:
        self.args = args
        self.count = count
        self.work = work
        self.found: dict[str, float] = {}
        self.config_path = work / "federation.yaml"
        self.config_path.write_text(json.dumps(SETTINGS))  # JSON is YAML
        self.config = FederationConfig.model_validate(SETTINGS)

    def note(self, name: str, value: float) -> None:
        """Keep a figure and print it at once (a run cut short still shows what it measured)."""
        self.found[name] = value
        print(f"  {name}: {shown(FIGURES[name].unit, value)}", flush=True)

    def server(self, etcd: EtcdCluster, name: str) -> ServerProcess:
        return ServerProcess(
            etcd.connection,
            self.work / f"{name}.log",
            ["--config", str(self.config_path)],
            env={"FEDQ_ADMIN_TOKEN": ADMIN},
        )

    async def measure(self) -> dict[str, float]:
        args = self.args
        etcd = EtcdCluster(args.members, secure=False, quota_backend_bytes=ETCD_QUOTA, startup_timeout=600)
        with etcd:
            store = EtcdStore(etcd.connection)
            try:
                await store.put(keys.QUEUES, queue_tree().config.model_dump_json(by_alias=True).encode())
                await self.submits_and_reads(etcd, store)
                await self.schedulers(etcd, store)
                await self.restore(etcd)
            finally:
                await store.close()
                if args.profile is not None:  # the servers' logs: what the scheduler said when it lost a lease
                    for log_file in self.work.glob("*.log"):
                        shutil.copy(log_file, args.profile / f"{self.count}-{log_file.name}")
            etcd.stop(kill=True)  # its data goes with its directory
        return self.found

    async def submits_and_reads(self, etcd: EtcdCluster, store: Store) -> None:
        args, count = self.args, self.count
        requests = bodies(count, args.batch, args.tenants)
        rng = random.Random(2)
        server = self.server(etcd, "first")
        await asyncio.to_thread(server.start)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=600) as http:
                tokens = await tenant_tokens(http, args.tenants, args.in_flight)
                lost_before = server.log(tail=10**9).count(LOST)
                firsts = [(tokens[f"tenant-{t}"], single(rng, t)) for t in range(args.tenants)]
                started, latencies, answered = await send(http, firsts, args.in_flight)
                self.note("a tenant's first submit (median)", statistics.median(latencies))
                print(
                    f"  each tenant's first submit (its quota sum): p99 {p99(latencies) * 1000:,.0f} ms, "
                    f"{max(answered) - started:.1f} s for {args.tenants:,} tenants, {args.in_flight} at once"
                )
                bulk = [(tokens[tenant], body) for tenant, body in requests]
                del requests
                started, latencies, answered = await send(http, bulk, args.in_flight)
                lost = server.log(tail=10**9).count(LOST) - lost_before
                seconds = max(answered) - started
                tail_rate = count / 10 / (max(answered) - sorted(answered)[len(answered) * 9 // 10])
                self.note("bulk submit", count / seconds)
                self.note("lost leader leases during the burst", lost)
                print(
                    f"  submitted {count:,} jobs in {len(bulk):,} requests, {seconds:.1f} s; the last tenth at "
                    f"{tail_rate:,.0f} jobs/s; request p99 {p99(latencies) * 1000:,.0f} ms"
                )
                print("  " + memory_line(etcd, server))
                singles = [(tokens["tenant-0"], single(rng, j)) for j in range(args.singles)]
                latencies = (await send(http, singles, 1))[1]
                self.note("single submit p50", statistics.median(latencies))
                self.note("single submit p99", p99(latencies))
                await reads(http, tokens["tenant-1"], count, args, self.note)
        finally:
            await asyncio.to_thread(server.stop)

    async def schedulers(self, etcd: EtcdCluster, store: Store) -> None:
        """Cold start, memory, warm takeover, cycles, dispatch and the database's size."""
        cold = self.server(etcd, "cold")
        clock = ManualClock(time.time())  # frozen: the clusters never go silent while the bench runs
        standby = SchedulerService(store, self.config, clock)
        try:
            await self.cold_start(cold, store)
            await self.stand_by(standby)
            died = await store.put(BENCH_KEY, b"kill")
            lease_gone = asyncio.create_task(next_delete(store, keys.LEADER, died))
            killed = time.perf_counter()
            cold.kill()  # the scheduler child dies with it (federation/parent_death.py)
            await lease_gone
            began = time.perf_counter()
            leads = await standby.lead()
            led = time.perf_counter()
            self.note("lead() alone", led - began)
            self.note("warm takeover", led - killed)
            assert leads, "the stand-by did not lead once the killed leader's lease ran out"
            await self.cycles(store, standby, clock)
            self.note("etcd database size", max(member.size for member in await store.members()))
        finally:
            await asyncio.to_thread(cold.stop)
            await standby.close()

    async def cold_start(self, cold: ServerProcess, store: Store) -> None:
        """From spawning ``cold`` to its scheduler's first cycle (its first status write)."""
        first_cycle = asyncio.create_task(next_put(store, keys.STATUS, await store.put(BENCH_KEY, b"cold")))
        profile = self.args.profile
        sampled = None
        if profile is not None:
            pid = lambda: None if cold.process is None else cold.process.pid  # noqa: E731
            sampled = Sampled(pid, profile / f"{self.count}-cold.raw")
        started = time.perf_counter()
        try:
            await asyncio.to_thread(cold.start)
            await first_cycle
        finally:
            first_cycle.cancel()
        self.note("cold start (spawn to first cycle)", time.perf_counter() - started)
        if sampled is not None:
            sampled.stop()
            print(f"  where the cold start went (py-spy, {sampled.out}):\n{sampled.summary()}")
        assert cold.process is not None
        resident = sum(rss(child) for child in children(cold.process.pid))
        print(
            f"  the cold scheduler process: {resident / GI:.2f} GiB resident, "
            f"{resident / self.count:,.0f} B per pending job"
        )

    async def stand_by(self, standby: SchedulerService) -> None:
        """Load ``standby`` under tracemalloc (what it holds per pending job); it must not lead."""
        gc.collect()
        tracemalloc.start()
        started = time.perf_counter()
        await standby.follow()
        loaded = time.perf_counter() - started
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert standby.state is not None
        pending = len(standby.state.pending)
        self.note("scheduler memory per pending job", held / pending)
        print(f"  a stand-by loaded {pending:,} pending jobs in {loaded:.1f} s (under tracemalloc)")
        assert not await standby.lead()

    async def cycles(self, store: Store, standby: SchedulerService, clock: ManualClock) -> None:
        args = self.args
        await join_clusters(store, 0, clock, clusters=CLUSTERS)
        clusters = ClusterService(store, JobRepository(store), TokenStore(store, clock), clock)
        rng = random.Random(1)
        for c in range(CLUSTERS):
            await clusters.report(f"cluster-{c}", cluster_report(rng, c, []))
        await standby.sync()
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            plan = await standby.cycle()
            times.append(time.perf_counter() - started)
            print(
                f"    cycle: {times[-1] * 1000:.0f} ms, planning {plan.seconds * 1000:.0f} ms of it, "
                f"{len(plan.dispatches):,} dispatched"
            )
        self.note("global cycle (median)", statistics.median(times))
        for c in range(CLUSTERS):
            await clusters.report(f"cluster-{c}", roomy())
        await standby.sync()
        if args.profile is None:
            dispatched, seconds, cycles = await dispatch_until(standby, args.dispatch)
        else:
            with profiled(args.profile / f"{self.count}-dispatch.prof"):
                dispatched, seconds, cycles = await dispatch_until(standby, args.dispatch)
        print(f"  dispatched {dispatched:,} jobs in {cycles} cycles, {seconds:.2f} s")
        self.note("dispatch", dispatched / seconds)

    async def restore(self, etcd: EtcdCluster) -> None:
        """SIGKILL one follower (the only member, alone) and start it again on its data dir."""
        leader = etcd.leader()
        victim = next((i for i in range(len(etcd.members)) if i != leader), leader)
        etcd.stop_member(victim)
        started = time.perf_counter()
        await asyncio.to_thread(etcd.start_member, victim)
        alone = EtcdStore(etcd.member_connection(victim))
        try:
            await alone.get(BENCH_KEY)  # linearizable: served once it has applied the leader's commit index
        finally:
            await alone.close()
        self.note("restore a killed member", time.perf_counter() - started)
        print(f"  restored member {victim} ({'the only member' if victim == leader else 'a follower'})")


def table(sizes: list[int], results: list[dict[str, float]]) -> bool:
    """Each figure at every size, the ratio of the largest size to the smallest, and its target."""
    print()
    print(f"{'figure':38}" + "".join(f"{size:>15,}" for size in sizes) + "    ratio  target")
    met = True
    for name, spec in FIGURES.items():
        values = [found[name] for found in results]
        ratio = f"{values[-1] / values[0]:6.2f}x" if len(values) > 1 and values[0] else "      -"
        verdict = ""
        if spec.check is not None:
            ok = spec.check(values)
            met = met and ok
            verdict = " ok" if ok else " MISSED"
        print(
            f"{name:38}" + "".join(f"{shown(spec.unit, v):>15}" for v in values) + f"  {ratio}  {spec.target}{verdict}"
        )
    return met


async def run(args: argparse.Namespace, work: Path) -> bool:
    results = []
    for count in args.jobs:
        print(f"{count:,} jobs, etcd of {args.members} member{'s' if args.members > 1 else ''}:", flush=True)
        (work / str(count)).mkdir()
        found = await Run(args, count, work / str(count)).measure()
        results.append(found)
    return table(args.jobs, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000], help="sizes, smallest first")
    parser.add_argument("--members", type=int, default=3, help="etcd members (1 where three do not fit in memory)")
    parser.add_argument("--tenants", type=int, default=TENANTS, help="tenants submitting (fewer to iterate faster)")
    parser.add_argument("--batch", type=int, default=100, help="jobs per bulk request, at most")
    parser.add_argument("--in-flight", type=int, default=4, help="bulk requests at once")
    parser.add_argument("--singles", type=int, default=300, help="sequential single submits after the bulk")
    parser.add_argument("--limit", type=int, default=500, help="jobs per page (the API's default)")
    parser.add_argument("--runs", type=int, default=7, help="requests or cycles per timed figure (the median)")
    parser.add_argument("--dispatch", type=int, default=20_000, help="jobs dispatched for the dispatch figure")
    parser.add_argument(
        "--profile", type=Path, help="profile the cold start (py-spy) and the dispatch (cProfile) into this directory"
    )
    args = parser.parse_args()
    configure_logging("warning")
    print(speed_marker(), flush=True)
    run_in_temp_dir(run, args, "fedq-bench-scale-")


if __name__ == "__main__":
    main()
