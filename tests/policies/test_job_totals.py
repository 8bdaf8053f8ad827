"""Kept job sums: a job handed again as the same object is not summed again; any other job is."""

from __future__ import annotations

from policies.framework.totals import JobTotals, job_totals
from policies.snapshot import JobInfo, TaskInfo, TaskStatus


def gang(statuses: list[TaskStatus]) -> JobInfo:
    return JobInfo("j", "q", tasks=[TaskInfo("j", "t", i, {"cpu": 1.0}, s) for i, s in enumerate(statuses)])


def test_the_same_job_reuses_its_sums_and_another_is_summed() -> None:
    totals = JobTotals()
    job = gang([TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.SUCCEEDED])
    totals.begin()
    first = totals.of(job)
    assert first == job_totals(job) == ({"cpu": 1.0}, {"cpu": 2.0})
    totals.begin()
    assert all(a is b for a, b in zip(totals.of(job), first, strict=True))
    changed = gang([TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.SUCCEEDED])
    totals.begin()
    assert totals.of(changed) == ({"cpu": 2.0}, {"cpu": 2.0})


def test_only_the_last_session_s_jobs_are_kept() -> None:
    totals = JobTotals()
    job = gang([TaskStatus.RUNNING])
    totals.begin()
    first = totals.of(job)
    totals.begin()  # a session without the job
    totals.begin()
    again = totals.of(job)
    assert again == first and again[0] is not first[0]
