"""A member agent on a 1,000-node simulated cluster (DESIGN 4; issue 4).

1. Local cycle: an ``Agent`` (tracker, ``LocalScheduler`` with configs/scheduler.yaml, simulated
   backend) is handed 10,000 pending tasks as assignments in a report reply (mixed sizes, gangs,
   50 queues, as bench/session.py's local case), then ``agent.schedule()`` is timed: snapshot from
   the tracker and backend, the session, and the launches. Target: <= 1 s. The next cycle, with
   the first one's jobs running, is timed too.
2. Report loop, in process: ``observe()`` + ``build_report()`` + JSON as the client sends it, every
   2 s of virtual time while tasks end and others start: p50/p99 and the report's size.
3. Round trip through a real ``fedq server`` (memory store, its scheduler running): a cluster of
   1,000 nodes joins with a join token, alice submits jobs through the API, the server dispatches
   them, the agent runs them; then ``agent.step()`` (observe, report over HTTP, the server's
   handling, the reply, a local cycle with nothing pending) is timed: p50/p99 and the body size.
   Nodes above 200 are summarised by shape (member_agent/capacity.py), so the size shows how well
   partly used nodes fold.
Prints the figures next to the target; exits 1 if the local cycle misses it.

Run: .venv/bin/python bench/agent.py [--runs 3] [--rounds 100] [--jobs 2000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation.client import FedqClient  # noqa: E402
from federation.launcher import ServerProcess, wait_until  # noqa: E402
from federation.logs import configure_logging  # noqa: E402
from federation.models import JobSpecBody  # noqa: E402
from federation.models.agent_report import PlainClusterReport, to_wire  # noqa: E402
from federation.models.cluster import Assignment, ReportReply  # noqa: E402
from member_agent.agent import Agent  # noqa: E402
from member_agent.backends.simulated import SimulatedBackend  # noqa: E402
from member_agent.local_scheduler import LocalScheduler  # noqa: E402
from policies import ManualClock, SystemClock  # noqa: E402
from policies.clock import Clock  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ADMIN = "fedq_admin_bench-agent"
NOW = 1_000_000.0
TASKS, QUEUES, TENANTS = 10_000, 50, 200
REPORT_INTERVAL = 2.0
CYCLE_TARGET = 1.0
SHAPES = (  # (nodes, resources): 40% small, 40% medium, 20% GPU nodes
    (400, {"cpu": 16, "memory": "64Gi"}),
    (400, {"cpu": 32, "memory": "128Gi"}),
    (200, {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8}),
)
SIZES = (
    {"cpu": "1", "memory": "2Gi"},
    {"cpu": "2", "memory": "8Gi"},
    {"cpu": "4", "memory": "16Gi"},
    {"cpu": "8", "memory": "32Gi"},
    {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
)


def backend(clock: Clock) -> SimulatedBackend:
    """1,000 nodes of three shapes over four zones."""
    groups = [
        {"count": count // 4, "resources": resources, "labels": {"zone": f"z{zone}"}, "namePrefix": "node"}
        for count, resources in SHAPES
        for zone in range(4)
    ]
    return SimulatedBackend.from_config({"nodes": groups}, clock)


def agent_on(clock: Clock, client: FedqClient | None = None) -> Agent:
    return Agent(client, "bench-1000", backend(clock), LocalScheduler(clock), clock)


def spec(
    rng: random.Random, j: int, replicas: int, queue: str, runtime: str, sizes: tuple[dict[str, str], ...] = SIZES
) -> dict[str, Any]:
    return {
        "queue": queue,
        "priority": rng.randint(0, 3),
        "walltime": rng.choice(("1h", "2h")),
        "minAvailable": replicas if j % 3 else 1,
        "tasks": [{"name": "w", "replicas": replicas, "resources": rng.choice(sizes), "runtime": runtime}],
    }


def assignments(rng: random.Random, tasks: int = TASKS) -> list[Assignment]:
    """Jobs of 1-16 tasks (gangs for two in three), ``tasks`` tasks in all, as the federation sends them."""
    out = []
    made = j = 0
    while made < tasks:
        replicas = min(rng.choice((1, 1, 2, 4, 8, 16)), tasks - made)
        queue = f"q{j % QUEUES // 10}.leaf{j % QUEUES}"
        runtime = f"{rng.randint(30, 600)}s"
        out.append(
            Assignment(
                job_id=f"job-{j}",
                epoch=1,
                name="bench",
                tenant=f"tenant-{j % TENANTS}",
                queue=queue,
                priority=rng.randint(0, 3),
                submit_time=NOW - rng.uniform(0, 3600),
                spec=JobSpecBody.model_validate(spec(rng, j, replicas, queue, runtime)),
            )
        )
        made += replicas
        j += 1
    return out


def running_tasks(agent: Agent) -> int:
    return sum(len(job.placed) for job in agent.tracker.jobs.values() if job.launched)


def local_cycles(seed: int) -> tuple[float, float, int, Agent, ManualClock]:
    """(first cycle s, second cycle s, tasks started by the first, the agent, its clock)."""
    clock = ManualClock(NOW)
    agent = agent_on(clock)
    agent.handle_reply(agent.build_report(), ReportReply(assignments=assignments(random.Random(seed))))
    started = time.perf_counter()
    agent.schedule()
    first = time.perf_counter() - started
    placed = running_tasks(agent)
    clock.advance(REPORT_INTERVAL)
    agent.observe()
    started = time.perf_counter()
    agent.schedule()
    second = time.perf_counter() - started
    return first, second, placed, agent, clock


def report_loop(agent: Agent, clock: ManualClock, rounds: int) -> tuple[list[float], list[int], PlainClusterReport]:
    """Each round: time passes, tasks end; time observe + build_report + JSON; accept; schedule (untimed)."""
    seconds, sizes = [], []
    report = PlainClusterReport()
    for _ in range(rounds):
        clock.advance(REPORT_INTERVAL)
        started = time.perf_counter()
        agent.observe()
        report = agent.build_report()
        body = json.dumps(to_wire(report)).encode()
        seconds.append(time.perf_counter() - started)
        sizes.append(len(body))
        agent.handle_reply(report, ReportReply())
        agent.schedule()
    return seconds, sizes, report


def round_trips(work: Path, jobs: int, rounds: int) -> tuple[list[float], int, int, int]:
    """Through a real server: (step seconds, report bytes, node entries, running jobs) at steady state."""
    server = ServerProcess(
        None, work / "server.log", ["--queues", str(REPO / "configs" / "queues.yaml")], env={"FEDQ_ADMIN_TOKEN": ADMIN}
    )
    with server, FedqClient(server.url, ADMIN) as admin:
        join = admin.create_join_token("bench-1000")
        alice = admin.create_tenant_token("alice")
        credential = admin.request("POST", "/v1/clusters/join", body={"token": join, "name": "bench-1000"})
        with FedqClient(server.url, credential["credential"]) as client:
            agent = agent_on(SystemClock(), client)
            agent.reconcile()
            rng = random.Random(3)
            specs = [  # small enough that every job runs at once: the report then lists them all
                {
                    "metadata": {"name": "bench"},
                    "spec": spec(rng, j, rng.choice((1, 2, 4)), "research.vision", "2h", SIZES[:3]),
                }
                for j in range(jobs)
            ]
            with FedqClient(server.url, alice) as tenant:
                tenant.submit_many(specs)

            def all_running() -> bool:
                agent.step()
                return sum(job.launched for job in agent.tracker.jobs.values()) == jobs

            wait_until(all_running, 300, f"{jobs} jobs running on the agent", interval=0.2)
            seconds = []
            for _ in range(rounds):
                started = time.perf_counter()
                agent.step()
                seconds.append(time.perf_counter() - started)
            report = agent.build_report()
            size = len(json.dumps(to_wire(report)).encode())
            return seconds, size, len(report.nodes), len(report.running)


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="fresh agents whose first local cycle is timed")
    parser.add_argument("--rounds", type=int, default=100, help="reports timed in process and through the server")
    parser.add_argument("--jobs", type=int, default=2_000, help="jobs submitted through the server for part 3")
    args = parser.parse_args()
    configure_logging("warning")  # per-job info lines would be timed with the work

    results = [local_cycles(seed) for seed in range(args.runs)]
    first = statistics.median(r[0] for r in results)
    second = statistics.median(r[1] for r in results)
    _, _, placed, agent, clock = results[-1]
    print(
        f"local cycle, {TASKS:,} pending tasks x 1,000 nodes (agent.schedule: snapshot, session, launches): "
        f"median {first:.3f} s of {args.runs}   target <= {CYCLE_TARGET:g} s   ({placed:,} tasks started)"
    )
    print(f"  next cycle, those running and the rest pending: median {second:.3f} s")

    seconds, sizes, report = report_loop(agent, clock, args.rounds)
    print(
        f"report build in process (observe + build_report + JSON), every {REPORT_INTERVAL:g} s of virtual time: "
        f"{percentiles(seconds)}; {statistics.median(sizes):,.0f} B median "
        f"({len(report.nodes)} node entries for 1,000 nodes, {len(report.running):,} running jobs)"
    )

    work = Path(tempfile.mkdtemp(prefix="fedq-bench-agent-"))
    trips, size, entries, running = round_trips(work, args.jobs, args.rounds)
    print(
        f"report round trip through fedq server (agent.step over HTTP, memory store): {percentiles(trips)}; "
        f"body {size:,} B ({entries} node entries for 1,000 nodes, {running:,} running jobs)"
    )
    return 0 if first <= CYCLE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
