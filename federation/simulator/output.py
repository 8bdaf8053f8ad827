"""jobs.csv, events.csv, tasks.csv and metrics.json: the files scripts compare across runs, so identical
inputs give identical bytes.

Times are seconds from the scenario start, written with exactly three decimals (milliseconds); JSON
floats are rounded to six decimals; rows and keys come in a fixed order.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from federation.lifecycle import JobEvent
from federation.simulator.records import JobOutcome, TaskOutcome

JOBS_CSV_HEADER = ("id", "tenant", "queue", "cluster", "submit", "start", "end", "wait", "state", "resources")
EVENTS_CSV_HEADER = ("id", "time", "from", "to", "reason", "cluster", "epoch")
TASKS_CSV_HEADER = ("id", "epoch", "cluster", "task", "indexes", "tasks", "start", "end", "state")
JSON_DECIMALS = 6


def write_jobs_csv(records: Iterable[JobOutcome], path: str | Path) -> None:
    """One row per job, ordered by submit time and, for equal submits, by the order given.

    start, end and wait are empty for a job that never ran; ``resources`` is the job's total over its
    tasks as ``name=amount`` pairs in base units, sorted by name and joined by ``;`` (``cpu=2;memory=1073741824``).
    """
    rows = sorted(records, key=lambda r: r.submit)  # stable: ties keep the simulator's (file) order
    with Path(path).open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(JOBS_CSV_HEADER)
        for r in rows:
            writer.writerow(
                (
                    r.id,
                    r.tenant,
                    r.queue,
                    r.cluster,
                    format_seconds(r.submit),
                    format_seconds(r.start),
                    format_seconds(r.end),
                    format_seconds(r.wait),
                    r.state,
                    format_resources(r.resources),
                )
            )


def write_events_csv(events: Mapping[str, Sequence[JobEvent]], path: str | Path) -> None:
    """Every job's history as the store would keep it, one row per entry, jobs in the order given."""
    with Path(path).open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(EVENTS_CSV_HEADER)
        for job_id, history in events.items():
            for e in history:
                source = e.source.value if e.source is not None else ""
                writer.writerow((job_id, format_seconds(e.time), source, e.target.value, e.reason, e.cluster, e.epoch))


def write_tasks_csv(tasks: Iterable[TaskOutcome], path: str | Path) -> None:
    """Task runs, one row per set of a job's tasks that started and ended together, in the order given
    (jobs in file order, then epoch, start, end): an elastic job's tasks beyond its gang start as room
    allows, so its split shows here. ``indexes``: ``0-9;12`` (ranges joined by ``;``), ``tasks`` their count."""
    with Path(path).open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(TASKS_CSV_HEADER)
        for t in tasks:
            indexes = ";".join(str(a) if a == b else f"{a}-{b}" for a, b in t.indexes)
            start, end = format_seconds(t.start), format_seconds(t.end)
            writer.writerow((t.id, t.epoch, t.cluster, t.task, indexes, t.count, start, end, t.state))


def write_metrics_json(metrics: Mapping[str, object], path: str | Path) -> None:
    """The metrics with sorted keys and rounded floats; NaN or infinity is an error, not a silent null."""
    text = json.dumps(_stable(metrics), sort_keys=True, indent=2, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def format_seconds(value: float | None) -> str:
    """Fixed three decimals ("" for None), never "-0.000": the same number always reads the same."""
    if value is None:
        return ""
    return f"{round(value, 3) + 0.0:.3f}"


def format_resources(resources: Mapping[str, float]) -> str:
    """``cpu=2;memory=1073741824``: whole numbers without a fraction, others as Python's shortest repr."""
    return ";".join(f"{name}={int(q) if float(q).is_integer() else q!r}" for name, q in sorted(resources.items()))


def _stable(value: object) -> object:
    """A JSON-ready copy with every float rounded, so float noise below 1e-6 cannot change the file."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"metric value {value} is not finite")
        return round(value, JSON_DECIMALS) + 0.0
    if isinstance(value, Mapping):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stable(v) for v in value]
    return value
