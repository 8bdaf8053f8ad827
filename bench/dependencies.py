"""The production global cycle with jobs waiting on dependencies (issue 23, acceptance 3).

The world of bench/cycle.py (100 clusters, 200 leaf queues, 1,000 tenants), fed to
``FederationState`` as the scheduler service feeds it (real records, bytes parsed back, upsert_job).
Three states, built from the same records:

- ``plain``: 100,000 pending jobs, none with dependencies (the cycle without dependencies);
- ``waiting``: the same 100,000, of which 30 % (``--dependent``) wait ``afterok`` on one or two of
  the others (``JobRecord.after``): the dependency index keeps them out of the pending index;
- ``free``: the 70 % alone, for the cost the waiting jobs add to a cycle over the jobs it considers.

The collector is set as the service sets it once loaded (``keep_long_lived``). Cycles of the three
are timed alternately (plain, waiting, free, plain, ...), so a drift of the
machine's speed falls on each alike; the target is the waiting cycle within 10 % of the plain one.
Also timed: a dependency's end as the watch brings it (``upsert_job`` of its terminal record,
which frees its dependants through the index), per end.

Run: .venv/bin/python bench/dependencies.py [--pending 100000] [--dependent 0.3] [--runs 9]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cycle import NOW, clusters, pending_record, queue_tree, stored  # noqa: E402
from machine import speed_marker  # noqa: E402

from federation.accounting import Accountant  # noqa: E402
from federation.collector import keep_long_lived  # noqa: E402
from federation.config import FederationConfig  # noqa: E402
from federation.models import JobRecord, JobState  # noqa: E402
from federation.models.dependency import Wait  # noqa: E402
from federation.scheduler.cycle import GlobalScheduler  # noqa: E402
from federation.scheduler.state import FederationState  # noqa: E402
from policies import ManualClock  # noqa: E402

WITHIN = 0.10  # the waiting cycle may be this much slower than the plain one


def world(records: list[tuple[JobRecord, bytes]]) -> tuple[FederationState, Accountant]:
    """bench/cycle.py's clusters and usage (seed 1), then ``records`` upserted as the watch would."""
    config = FederationConfig()
    state = FederationState()
    state.set_queues(queue_tree())
    accountant = Accountant(ManualClock(NOW), config.fairshare.half_life, config.fairshare.usage_weights)
    revision = clusters(state, accountant, random.Random(1), 50)
    for record, raw in records:
        revision += 1
        state.upsert_job(record, revision, raw)
    return state, accountant


def records(pending: int, dependent: float) -> tuple[list[JobRecord], list[JobRecord], list[JobRecord]]:
    """The free jobs, the others as plain jobs, and the same others waiting on one or two free jobs."""
    rng = random.Random(7)
    made = [pending_record(rng, j) for j in range(pending)]
    waiting_count = int(pending * dependent)
    free, others = made[: pending - waiting_count], made[pending - waiting_count :]
    waiting = []
    for record in others:
        targets = rng.sample(free, 2 if rng.random() < 0.25 else 1)
        waits = [Wait(job=target.id, condition="afterok") for target in targets]
        waiting.append(record.model_copy(update={"after": waits}))
    return free, others, waiting


def ends(state: FederationState, targets: list[JobRecord]) -> float:
    """Seconds per dependency end: its terminal record upserted, its dependants freed by the index."""
    revision = 10**9
    finished = [
        stored(t.model_copy(update={"state": JobState.SUCCEEDED, "end_time": NOW, "reason": "done"})) for t in targets
    ]
    started = time.perf_counter()
    for record, raw in finished:
        revision += 1
        state.upsert_job(record, revision, raw)
    return (time.perf_counter() - started) / len(finished)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--dependent", type=float, default=0.3, help="share of the pending jobs that wait")
    parser.add_argument("--runs", type=int, default=9, help="cycles timed per state, alternating")
    args = parser.parse_args()
    print(speed_marker(), flush=True)

    started = time.perf_counter()
    free, others, waiting = records(args.pending, args.dependent)
    free_bytes = [stored(r) for r in free]
    states = {
        "plain": world(free_bytes + [stored(r) for r in others]),
        "waiting": world(free_bytes + [stored(r) for r in waiting]),
        "free": world(free_bytes),
    }
    print(
        f"three states of {args.pending:,} / {args.pending:,} / {len(free):,} pending built in "
        f"{time.perf_counter() - started:.0f} s"
    )
    keep_long_lived()  # as the service does once its state is loaded
    blocked = len(states["waiting"][0].blocked)
    considered = {name: len(state.pending) for name, (state, _) in states.items()}
    assert blocked == len(waiting) and considered["waiting"] == considered["free"] == len(free), (blocked, considered)

    schedulers = {name: GlobalScheduler(FederationConfig(), ManualClock(NOW)) for name in states}
    times: dict[str, list[float]] = {name: [] for name in states}
    for _ in range(args.runs + 1):  # the first round warms each state's caches and is dropped
        for name, (state, accountant) in states.items():
            began = time.perf_counter()
            schedulers[name].plan(state, accountant.usage(NOW))
            times[name].append(time.perf_counter() - began)
    median = {name: statistics.median(t[1:]) for name, t in times.items()}

    waiting_state = states["waiting"][0]
    targets = sorted({w.job for r in waiting[:2000] for w in r.after})
    by_id = {r.id: r for r in free}
    per_end = ends(waiting_state, [by_id[t] for t in targets])
    freed = len(waiting) - len(waiting_state.blocked)

    ratio = median["waiting"] / median["plain"]
    print(
        f"global cycle, {args.pending:,} pending, none waiting: median {median['plain'] * 1000:.0f} ms of {args.runs}"
    )
    print(
        f"global cycle, {args.pending:,} pending, {len(waiting):,} ({args.dependent:.0%}) waiting on dependencies: "
        f"median {median['waiting'] * 1000:.0f} ms = {ratio:.2f}x the cycle without   target <= {1 + WITHIN:.2f}x"
    )
    print(
        f"global cycle over the {len(free):,} jobs it considers alone: median {median['free'] * 1000:.0f} ms "
        f"(the waiting jobs add {(median['waiting'] / median['free'] - 1) * 100:+.1f} %)"
    )
    print(
        f"a dependency's end through the watch (upsert + index): {per_end * 1e6:.1f} us per end, "
        f"{len(targets):,} ends freed {freed:,} jobs"
    )
    return 0 if ratio <= 1 + WITHIN else 1


if __name__ == "__main__":
    sys.exit(main())
