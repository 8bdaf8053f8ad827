"""The example quota plot of docs/reports.md and the README: a synthetic week on 200 cores.

Regenerate with ``.venv/bin/python -m tests.reports.example_plot`` (writes docs/img/quota.png).
The week is deterministic (seeded), so the committed PNG only changes when the plot does.
"""

from __future__ import annotations

import random
from pathlib import Path

from federation.accounting import Accountant
from federation.models import JobState
from federation.reports.facts import JobsRead
from federation.reports.models import QuotaReport
from federation.reports.plot import plot_quota
from federation.reports.quota import build_quota_report
from policies.clock import ManualClock
from tests.reports.scenario import T0, job, tree

DAY = 86_400.0
OUT = Path(__file__).resolve().parents[2] / "docs" / "img" / "quota.png"
CAPACITY = {"cpu": 200.0}
# tenant -> (leaf queue, cores per job, mean jobs started per hour, hours of the day it submits)
PATTERNS: dict[str, tuple[str, float, float, range]] = {
    "alice": ("research.vision", 16, 2.0, range(0, 24)),
    "bob": ("research.vision", 8, 1.5, range(8, 20)),
    "carol": ("research.nlp", 32, 0.6, range(18, 24)),
    "dave": ("scratch.default", 4, 4.0, range(0, 24)),
}


def example_report(days: int = 7, bins: int = 7 * 4) -> QuotaReport:
    """Jobs of 1-6 h started at random in each tenant's hours, never over capacity; 6-hour bins."""
    clock = ManualClock(T0)
    acct = Accountant(clock, DAY, {"cpu": 1.0})
    rng = random.Random(7)
    starts: list[tuple[float, str, str, float, float]] = []
    for tenant, (queue, cores, rate, hours) in PATTERNS.items():
        for hour in range(days * 24):
            if hour % 24 in hours:
                for _ in range(rng.randint(0, round(2 * rate))):
                    at = T0 + hour * 3600 + rng.uniform(0, 3600)
                    starts.append((at, tenant, queue, cores, rng.uniform(1, 6) * 3600))
    events: list[tuple[float, int, str, str, str, float]] = []  # (time, 1 start / 0 stop, job, ...)
    for i, (at, tenant, queue, cores, run) in enumerate(sorted(starts)):
        events += [(at, 1, f"j{i}", tenant, queue, cores), (at + run, 0, f"j{i}", tenant, queue, cores)]
    used = 0.0
    running: set[str] = set()
    for at, kind, job_id, tenant, queue, cores in sorted(events):
        if kind == 1 and used + cores <= CAPACITY["cpu"]:
            acct.start(job_id, tenant, queue, "east" if cores >= 16 else "west", {"cpu": cores}, at=at)
            running.add(job_id)
            used += cores
        elif kind == 0 and job_id in running:
            acct.stop(job_id, at=at)
            running.discard(job_id)
            used -= cores
    end = T0 + days * DAY
    pending = [job(f"p-{t}", t, q, JobState.PENDING, end, cpu=c * 4) for t, (q, c, _, _) in PATTERNS.items()]
    return build_quota_report(
        acct.snapshot(end), tree(), JobsRead.of(pending), CAPACITY, since=T0, until=end, bins=bins
    )


def write_example(path: Path = OUT) -> Path:
    report = example_report()
    assert report.series is not None
    plot_quota(report.series, path, title="Usage against fair share, one synthetic week on 200 cores")
    return path


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    print(write_example())
