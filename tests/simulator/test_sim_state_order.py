"""The federation state lists a cluster's jobs in dispatch order, whatever the process's hash seed.

Reclaim and preempt break ties between equal victims by the order of the running jobs, so that order
must not come from iterating a set of strings (randomised per process): the same inputs would pick
different victims from run to run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from federation.models import JobRecord, JobSpecBody, JobState, TaskSpec
from federation.scheduler.state import FederationState


def _on_cluster(job_id: str) -> JobRecord:
    spec = JobSpecBody(queue="q", tasks=[TaskSpec(resources={"cpu": 1})])
    return JobRecord(
        id=job_id, name=job_id, tenant="t", queue="q", spec=spec, submit_time=0.0, state=JobState.RUNNING, cluster="c"
    )


def test_snapshot_lists_running_jobs_in_dispatch_order() -> None:
    state = FederationState()
    order = ["zeta", "alpha", "mu", "beta"]  # neither sorted nor any hash order, on purpose
    for revision, job_id in enumerate(order, start=1):
        state.upsert_job(_on_cluster(job_id), revision, b"")
    state.remove_job("mu")
    assert [job.id for job in state.snapshot(0.0, 60.0).jobs] == ["zeta", "alpha", "beta"]


def test_order_is_the_same_under_different_hash_seeds() -> None:
    script = (
        "from federation.models import JobRecord, JobSpecBody, JobState, TaskSpec\n"
        "from federation.scheduler.state import FederationState\n"
        "spec = JobSpecBody(queue='q', tasks=[TaskSpec(resources={'cpu': 1})])\n"
        "s = FederationState()\n"
        "for r in range(1, 51):\n"
        "    j = f'j{r}'\n"
        "    rec = JobRecord(id=j, name=j, tenant='t', queue='q', spec=spec, submit_time=0.0,"
        " state=JobState.RUNNING, cluster='c')\n"
        "    s.upsert_job(rec, r, b'')\n"
        "print(','.join(job.id for job in s.snapshot(0.0, 60.0).jobs))\n"
    )
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert outputs == {",".join(f"j{n}" for n in range(1, 51)) + "\n"}
