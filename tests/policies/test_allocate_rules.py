"""Allocate rules. Fair share judges a job against what its queue held before it: a queue below its slice may take
a gang that overshoots the slice (HTCondor's negotiator lets a submitter under its share take one
more match), and a gang is never cut in half by the slice; ``maxJobs`` bounds one session."""

from __future__ import annotations

from typing import Any

import pytest

from policies import (
    JobInfo,
    ManualClock,
    NodeInfo,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
    close_session,
    load_conf,
    open_session,
)
from policies.actions import allocate, placing
from policies.framework.decisions import INSUFFICIENT

CONF = {
    "placement": "job",
    "actions": "allocate",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": [{"name": "fairshare"}]}],
}


def job(job_id: str, queue: str, tasks: int, status: TaskStatus = TaskStatus.PENDING) -> JobInfo:
    return JobInfo(
        job_id,
        queue,
        "t",
        submit_time=0.0,
        tasks=[
            TaskInfo(job_id, "w", i, {"cpu": 1.0}, status, "c1" if status is TaskStatus.RUNNING else "")
            for i in range(tasks)
        ],
    )


def test_a_queue_below_its_slice_takes_a_whole_gang_that_overshoots_it() -> None:
    # 8 cpus, queues a and b with equal weight and enough demand: slices of 4 each. a already runs 3,
    # b has five 1-cpu jobs. a is below its slice, so its 2-task gang may take it to 5; b, served in
    # fair-share order, stops once it holds its 4 (here at 3, when the cpus run out). Judged task by
    # task against "held + task <= slice", the gang's second task would be refused, b would fill to
    # 4, and the 1 cpu left for the surplus pass could not hold the gang.
    queues = {"a": QueueInfo("a"), "b": QueueInfo("b")}
    running = job("r", "a", 3, TaskStatus.RUNNING)
    gang = job("g", "a", 2)
    others = [job(f"o{i}", "b", 1) for i in range(5)]
    node = NodeInfo("c1", {"cpu": 8.0}, used={"cpu": 3.0})
    ssn = open_session(load_conf(CONF), Snapshot([node], [running, gang, *others], queues), ManualClock(0))
    ssn.run()
    decisions = close_session(ssn)
    placed = [b.task for b in decisions.binds if b.job == "g"]
    assert len(placed) == 2
    assert sum(1 for b in decisions.binds if b.job.startswith("o")) == 3


def test_allocate_starts_at_most_max_jobs_per_session() -> None:
    conf = {**CONF, "configurations": [{"name": "allocate", "arguments": {"maxJobs": 3}}]}
    jobs = [job(f"j{i}", "a", 1) for i in range(6)]
    ssn = open_session(load_conf(conf), Snapshot([NodeInfo("c1", {"cpu": 8.0})], jobs, {}), ManualClock(0))
    ssn.run()
    assert len(close_session(ssn).bound_jobs()) == 3


def test_with_no_node_each_queue_waits_for_one_and_no_job_is_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    # No member cluster has reported (a federation's first start, or every cluster lost): nothing can
    # start whatever the job, so the reason is the queue's, not each job's. Kueue's rule: a workload of an
    # inactive ClusterQueue (one with no usable resource flavor) is not tried for a fit; it is left
    # inadmissible with the queue's reason, "ClusterQueue <name> is inactive" (pkg/scheduler/scheduler.go,
    # nominate). By hand: no node, so no bind and no reservation; the two queues with jobs (a, b) each get
    # the one reason, the idle queue none, and no job has a reason of its own. Tried one by one, each job
    # was said to be too big for "the largest node" of none, and a cycle over 1,000,000 queued jobs
    # took minutes (issue 35).
    tried: list[str] = []
    real = placing.try_job

    def counted(ssn: Any, job: JobInfo) -> tuple[bool, bool]:
        tried.append(job.id)
        return real(ssn, job)

    monkeypatch.setattr(allocate, "try_job", counted)
    conf = {**CONF, "actions": "allocate, backfill", "tiers": [*CONF["tiers"], {"plugins": [{"name": "reservation"}]}]}
    queues = {"a": QueueInfo("a"), "b": QueueInfo("b"), "idle": QueueInfo("idle")}
    jobs = [job(f"a{i}", "a", 2) for i in range(3)] + [job("b0", "b", 1)]

    ssn = open_session(load_conf(conf), Snapshot([], jobs, queues), ManualClock(0))
    ssn.run()
    decisions = close_session(ssn)

    assert tried == [] and decisions.binds == [] and decisions.reservations == []
    assert decisions.reasons == {}
    assert {queue: (r.code, r.message) for queue, r in decisions.queue_reasons.items()} == {
        "a": (INSUFFICIENT, "there is no cluster to run it on"),
        "b": (INSUFFICIENT, "there is no cluster to run it on"),
    }
