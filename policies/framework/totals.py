"""What each job's tasks hold and want, kept from one session to the next by a caller that keeps its jobs.

A session opens by summing every task of every job it is handed; a member agent hands each cycle
the same JobInfo objects for its running jobs until their tasks change, so their sums need not be
worked out again.
"""

from __future__ import annotations

from policies import resources as res
from policies.resources import Resources
from policies.snapshot import OCCUPYING, JobInfo, TaskStatus


def job_totals(job: JobInfo) -> tuple[Resources, Resources]:
    """What the job's tasks hold, and what they hold or wait for (held plus pending), task by task."""
    held: Resources = {}
    want: Resources = {}
    for t in job.tasks:
        if t.status in OCCUPYING:
            res.iadd(held, t.resources)
        elif t.status == TaskStatus.PENDING:
            res.iadd(want, t.resources)
    res.iadd(want, held)
    return held, want


class JobTotals:
    """Each job's ``job_totals``, kept by the caller from one session to the next.

    Sessions put back every task state they change, so a JobInfo the caller hands the next session
    again, the very same object with the same tasks, holds and wants what it did. Only the jobs of
    the last session are kept. The sums are read, never changed.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[JobInfo, Resources, Resources]] = {}
        self._current: dict[str, tuple[JobInfo, Resources, Resources]] = {}

    def begin(self) -> None:
        """A session opens: what the previous one summed is what this one may reuse."""
        self._last, self._current = self._current, {}

    def of(self, job: JobInfo) -> tuple[Resources, Resources]:
        kept = self._last.get(job.id)
        if kept is None or kept[0] is not job:
            kept = (job, *job_totals(job))
        self._current[job.id] = kept
        return kept[1], kept[2]
