"""``GET /v1/jobs`` over a large job index in real etcd: what one page of ``fedq jobs`` costs.

N jobs are written with ``JobRepository.create``, each in one of 20 leaf queues, of a random one of
``--tenants`` tenants, and Pending, Running or Succeeded (3:1:1 at random), so the index
(``view/<state>/<queue>/<id>``) holds 60 state and queue ranges with every tenant in each. Then the
real API app is called in process (httpx's ASGI transport, as the API tests do) and these requests
are timed, each the median of ``--runs``:

- the first page (admin, no filter, ``limit`` items);
- a later page: the ``--later``-th, reached by following ``continue`` from the first;
- a tenant's first page (that tenant's token, so the tenant filter applies);
- a tenant's whole listing: every page followed until ``continue`` is null (one pass, not a median);
- the queue view (``GET /v1/queues``: unfinished jobs per leaf and state, counted by the store).

Prints the figures; DESIGN has no target for listing, so it says "no target".

Run: .venv/bin/python bench/list.py [--jobs 100000] [--limit 500] [--later 20] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dispatch import pending_jobs, queues  # noqa: E402

from federation.api.app import create_app  # noqa: E402
from federation.auth import Role  # noqa: E402
from federation.jobs import JobRepository  # noqa: E402
from federation.logs import configure_logging  # noqa: E402
from federation.models import JobRecord, JobState  # noqa: E402
from federation.store import EtcdServer, EtcdStore  # noqa: E402
from policies import ManualClock  # noqa: E402

ADMIN = "fedq_admin_bench-list"
STATES = (JobState.PENDING, JobState.PENDING, JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED)


def jobs(count: int, tenants: int, now: float) -> list[JobRecord]:
    """``bench/dispatch.py``'s jobs over its 20 leaf queues, each moved to a random tenant and state of
    ``STATES`` (seeded, so every run lists the same index)."""
    pick = random.Random(1)
    return [
        record.model_copy(update={"tenant": f"tenant-{pick.randrange(tenants)}", "state": pick.choice(STATES)})
        for record in pending_jobs(count, now)
    ]


async def timed(http: httpx.AsyncClient, headers: dict[str, str], params: dict[str, Any]) -> tuple[float, Any]:
    """One list request: (seconds, its JSON body)."""
    started = time.perf_counter()
    response = await http.get("/v1/jobs", params=params, headers=headers)
    seconds = time.perf_counter() - started
    response.raise_for_status()
    return seconds, response.json()


async def median_of(runs: int, http: httpx.AsyncClient, headers: dict[str, str], params: dict[str, Any]) -> float:
    return statistics.median([(await timed(http, headers, params))[0] for _ in range(runs)])


async def run(args: argparse.Namespace, work: Path) -> None:
    with EtcdServer(work / "etcd", quota_backend_bytes=8 * 1024**3, secure=False) as etcd:
        store = EtcdStore(etcd.endpoint)
        try:
            clock = ManualClock(time.time())
            started = time.perf_counter()
            await JobRepository(store).create(jobs(args.jobs, args.tenants, clock.now()))
            print(f"wrote {args.jobs:,} jobs in {time.perf_counter() - started:.1f} s")
            app = create_app(store, admin_token=ADMIN, clock=clock)
            await app.state.fedq.queues.apply(queues())
            tenant_token = await app.state.fedq.tokens.issue(Role.TENANT, "tenant-1")
            admin = {"Authorization": f"Bearer {ADMIN}"}
            tenant = {"Authorization": f"Bearer {tenant_token}"}
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://fedq", timeout=600) as http:
                first_params = {"limit": args.limit}
                first = await median_of(args.runs, http, admin, first_params)
                print(f"first page ({args.limit} items, admin, no filter): {first * 1000:.0f} ms   no target")

                params: dict[str, Any] = dict(first_params)
                for _ in range(args.later - 1):
                    params["continue"] = (await timed(http, admin, params))[1]["continue"]
                later = await median_of(args.runs, http, admin, params)
                print(f"page {args.later} (following continue): {later * 1000:.0f} ms   no target")

                mine = await median_of(args.runs, http, tenant, first_params)
                print(
                    f"a tenant's first page (tenant filter, 1 in {args.tenants} jobs): {mine * 1000:.0f} ms   no target"
                )

                params = dict(first_params)
                pages = items = 0
                started = time.perf_counter()
                while True:
                    body = (await timed(http, tenant, params))[1]
                    pages += 1
                    items += len(body["items"])
                    if not body["continue"]:
                        break
                    params["continue"] = body["continue"]
                walk = time.perf_counter() - started
                print(
                    f"a tenant's whole listing: {items:,} jobs in {pages} pages, {walk:.2f} s "
                    f"({walk / pages * 1000:.0f} ms per page)   no target"
                )

                views = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    (await http.get("/v1/queues", headers=admin)).raise_for_status()
                    views.append(time.perf_counter() - started)
                view = statistics.median(views)
                print(f"queue view (GET /v1/queues, counts per leaf and state): {view * 1000:.0f} ms   no target")
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--limit", type=int, default=500, help="items per page (the API's default)")
    parser.add_argument("--later", type=int, default=20, help="which page to time as the later one")
    parser.add_argument("--runs", type=int, default=5, help="requests per timed figure (the median is printed)")
    args = parser.parse_args()
    configure_logging("warning")
    work = Path(tempfile.mkdtemp(prefix="fedq-bench-list-"))
    asyncio.run(run(args, work))


if __name__ == "__main__":
    main()
