"""Bulk and single submit through the real API server into real etcd.

Prints bulk jobs/s (target >= 5,000), single-submit p50/p99 (target p99 <= 50 ms), and raw etcd
batched-put throughput measured in the same run, so the API's overhead is a ratio, not a guess.
Run: .venv/bin/python bench/submit.py [--jobs 20000] [--singles 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from etcd_raw import raw_txn_put_rate  # noqa: E402

from federation.launcher import ServerProcess  # noqa: E402
from federation.store import EtcdServer, EtcdStore  # noqa: E402

ADMIN = "fedq_admin_bench-admin"
REPO = Path(__file__).resolve().parents[1]


def job(i: int) -> dict[str, object]:
    return {
        "metadata": {"name": f"bench-{i % 1000}"},
        "spec": {
            "queue": "research.vision",
            "priority": i % 7,
            "walltime": "1h",
            "tasks": [{"name": "main", "replicas": 1 + i % 4, "resources": {"cpu": "1", "memory": "2Gi"}}],
        },
    }


async def raw_rate(endpoint: str, n: int) -> float:
    store = EtcdStore(endpoint, prefix="/bench-raw/")
    try:
        return await raw_txn_put_rate(store, n)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)  # with the singles, under the 50,000-job quota
    parser.add_argument("--batch", type=int, default=2_500)
    parser.add_argument("--singles", type=int, default=1_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fedq-bench-submit-"))
    with EtcdServer(work / "etcd", secure=False) as etcd:
        raw = asyncio.run(raw_rate(etcd.endpoint, args.jobs))
        server = ServerProcess(
            etcd.connection,
            work / "server.log",
            ["--queues", str(REPO / "configs" / "queues.yaml")],
            env={"FEDQ_ADMIN_TOKEN": ADMIN},
        )
        with server, httpx.Client(base_url=server.url, timeout=120) as http:
            token = http.post("/v1/tenants/alice/tokens", headers={"Authorization": f"Bearer {ADMIN}"}).json()["token"]
            http.headers["Authorization"] = f"Bearer {token}"
            started = time.perf_counter()
            for first in range(0, args.jobs, args.batch):
                response = http.post("/v1/jobs", json={"jobs": [job(i) for i in range(first, first + args.batch)]})
                response.raise_for_status()
            bulk = args.jobs / (time.perf_counter() - started)
            latencies = []
            for i in range(args.singles):
                started = time.perf_counter()
                http.post("/v1/jobs", json=job(i)).raise_for_status()
                latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    print(f"raw etcd batched puts (512 B, 128-op txns, 4 in flight): {raw:,.0f} puts/s")
    print(
        f"bulk submit through the API: {bulk:,.0f} jobs/s  (target >= 5,000; {bulk / raw:.2f} x raw puts,"
        f" each job is 2 puts)"
    )
    print(f"single submit latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms  (target p99 <= 50 ms)")


if __name__ == "__main__":
    main()
