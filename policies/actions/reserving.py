"""Booking reservations: shared by the reserve and backfill actions."""

from __future__ import annotations

from policies import resources as res
from policies.format import format_resources, format_time
from policies.framework.decisions import RESERVED, TOO_BIG
from policies.framework.session import Session
from policies.profile import ReservationBook, releases_of
from policies.snapshot import JobInfo, TaskInfo


def reservation_book(ssn: Session) -> ReservationBook:
    """The session's book, built on first use from idle resources and expected task ends (kept by
    the snapshot's caller across cycles, or gathered here from the running jobs)."""
    if ssn.book is None:
        idle = {n.name: res.sub(res.add(n.idle, n.releasing), n.pipelined) for n in ssn.nodes if not n.unschedulable}
        releases = ssn.releases if ssn.releases is not None else releases_of(ssn.running_jobs)
        ssn.book = ReservationBook(ssn.now, idle, releases)
        for task in ssn.placed_here():
            walltime = ssn.jobs[task.job].walltime
            if walltime is not None:
                ssn.book.release(task.node, ssn.now + walltime, task.resources)
    return ssn.book


def book(ssn: Session, job: JobInfo) -> bool:
    """Reserve the earliest start for ``job``'s gang; False when it can never start here."""
    tasks = ssn.pending_tasks(job)
    if not tasks:
        return False
    need = max(1, job.gang_size - ssn.ready_count(job) - ssn.pipelined_count(job))
    # One task per resources dict (a gang's replicas share one), the first of each: the largest size
    # and the first task of the greatest total are the same over these as over every task.
    first: dict[int, TaskInfo] = {}
    for t in tasks:
        first.setdefault(id(t.resources), t)
    shapes = list(first.values())
    size: dict[str, float] = {}
    for t in shapes:
        size = res.maximum(size, t.resources)
    probe = max(shapes, key=lambda t: sum(t.resources.values()))
    # On clusters, one whose nodes could never hold the gang at once is no place to reserve.
    runs = job.gang_runs() if ssn.whole_job else None
    nodes = [
        n.name
        for n in ssn.nodes
        if not n.unschedulable
        and ssn.predicate(probe, job, n) is None
        and (runs is None or n.could_hold(runs, job.spread))
    ]
    ledger = reservation_book(ssn)
    found = ledger.earliest(nodes, size, min(need, len(tasks)), job.walltime, ssn.whole_job)
    if found is None:
        noun = ssn.placer.noun
        none = f"no {noun}" if ssn.whole_job else f"no set of {noun}s"
        ssn.why(job, TOO_BIG, "reserve", f"{none} can ever hold {need} tasks of {format_resources(size)} at once")
        return False
    start, where = found
    booked = ledger.reserve(job.id, start, job.walltime, size, where)
    ssn.decisions.reservations.append(booked)
    ssn.reserved.add(job.id)
    ssn.why(job, RESERVED, "reserve", f"reserved on {', '.join(sorted(where))} from {format_time(start)}")
    return True


def depth_of(value: object) -> int:
    """``depth``: 1 = EASY, N, or 'all' (conservative)."""
    if value == "all":
        return 1 << 30
    if not isinstance(value, int | float | str):
        raise ValueError(f"depth must be a number or 'all', got {value!r}")
    depth = int(value)
    if depth < 0:
        raise ValueError(f"depth must be >= 0 or 'all', got {value!r}")
    return depth


def book_blocked(ssn: Session, depth: int) -> None:
    """Reserve for the jobs allocate stopped at, in order, up to ``depth`` reservations."""
    for job in ssn.blocked:
        if len(ssn.reserved) >= depth:
            break
        if job.id not in ssn.reserved:
            book(ssn, job)
    ssn.blocked = []
