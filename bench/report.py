"""The federation's report handler absorbing a burst through real etcd.

N jobs are dispatched by the real scheduler service to one cluster of 1,000 nodes; then that
cluster's reports go through ``ClusterService.report`` as the API calls it: the first picks up
the N assignments, the next carries N Running updates, the last N Succeeded updates. After a
dispatch burst this is what stands between a job being dispatched and the federation seeing it
run and end. DESIGN section 4 gives no figure; printed for the record (bench/README.md).

Run: .venv/bin/python bench/report.py [--jobs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dispatch import GI, pending_jobs, queues  # noqa: E402

from federation import keys  # noqa: E402
from federation.auth import Role, TokenStore  # noqa: E402
from federation.clusters import ClusterService  # noqa: E402
from federation.config import FederationConfig  # noqa: E402
from federation.jobs import JobRepository  # noqa: E402
from federation.logs import configure_logging  # noqa: E402
from federation.models import JobState  # noqa: E402
from federation.models.cluster import ClusterReport, JoinRequest, NodeReport, StatusUpdate  # noqa: E402
from federation.scheduler.service import SchedulerService  # noqa: E402
from federation.store import EtcdServer, EtcdStore  # noqa: E402
from policies import ManualClock  # noqa: E402

NODES = [
    NodeReport(
        name="n+999", count=1000, allocatable={"cpu": 64.0, "memory": 512 * GI}, free={"cpu": 64.0, "memory": 512 * GI}
    )
]


async def measure(jobs: int, work: Path) -> list[tuple[str, float]]:
    with EtcdServer(work / "etcd", secure=False) as etcd:
        store = EtcdStore(etcd.endpoint)
        try:
            clock = ManualClock(time.time())
            await store.put(keys.QUEUES, queues().model_dump_json(by_alias=True).encode())
            repository = JobRepository(store)
            await repository.create(pending_jobs(jobs, clock.now()))
            tokens = TokenStore(store, clock)
            clusters = ClusterService(store, repository, tokens, clock)
            await clusters.join(JoinRequest(token=await tokens.issue(Role.JOIN, "c0"), name="c0"))
            await clusters.report("c0", ClusterReport(nodes=NODES))
            scheduler = SchedulerService(store, FederationConfig.model_validate({"dispatchPerCycle": jobs}), clock)
            await scheduler.follow()
            assert await scheduler.lead()
            dispatched = len((await scheduler.cycle()).dispatches)
            if dispatched != jobs:
                raise RuntimeError(f"the scheduler dispatched {dispatched} of {jobs} jobs")
            timings = []
            started = time.perf_counter()
            reply = await clusters.report("c0", ClusterReport(nodes=NODES))
            timings.append((f"{len(reply.assignments):,} assignments picked up", time.perf_counter() - started))
            runs = [(a.job_id, a.epoch) for a in reply.assignments]
            for state in (JobState.RUNNING, JobState.SUCCEEDED):
                updates = [StatusUpdate(job_id=j, epoch=e, state=state, time=clock.now()) for j, e in runs]
                started = time.perf_counter()
                reply = await clusters.report("c0", ClusterReport(nodes=NODES, updates=updates))
                timings.append((f"{len(updates):,} {state.value} updates", time.perf_counter() - started))
                if reply.refused:
                    raise RuntimeError(f"{len(reply.refused)} updates refused: {reply.refused[0]}")
            await scheduler.close()
            return timings
        finally:
            await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2_000)
    args = parser.parse_args()
    configure_logging("error")
    timings = asyncio.run(measure(args.jobs, Path(tempfile.mkdtemp(prefix="fedq-bench-report-"))))
    for what, seconds in timings:
        print(f"report with {what}: {seconds:.2f} s ({args.jobs / seconds:,.0f} jobs/s)   no target in DESIGN")
    return 0


if __name__ == "__main__":
    sys.exit(main())
