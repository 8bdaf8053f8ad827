"""The local scheduler's kept running jobs: what it hands a session matches a rebuild."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from federation.models import JobSpecBody, TaskSpec
from member_agent.backends.base import TaskPhase, TaskStatus
from member_agent.local_scheduler import LocalScheduler, _job_info
from member_agent.tracker import LocalJob
from policies import JobInfo, ManualClock
from policies import TaskStatus as State

REPORTS = st.tuples(
    st.integers(0, 2), st.sampled_from(["n0", "n1"]), st.none() | st.integers(0, 5), st.sampled_from(list(TaskPhase))
)


def facts(info: JobInfo) -> list[tuple[object, ...]]:
    return [(t.name, t.index, t.resources, t.status, t.node, t.start_time, t.expected_end) for t in info.tasks]


@given(st.lists(st.lists(REPORTS, max_size=3), min_size=1, max_size=6))
def test_a_running_job_is_shown_as_a_rebuild_would_show_it(
    cycles: list[list[tuple[int, str, int | None, TaskPhase]]],
) -> None:
    spec = JobSpecBody(queue="default", walltime=100, tasks=[TaskSpec(replicas=3, resources={"cpu": 1.0})])
    job = LocalJob("j", 1, queue="default", spec=spec, launched=True)
    scheduler = LocalScheduler(ManualClock(0.0))
    for reports in cycles:
        for index, node, started, phase in reports:
            job.record(TaskStatus("j", "main", index, 1, phase, node=node, started_at=started))
        shown = scheduler._running_infos([job])
        expected = [_job_info(job, State.RUNNING)] if job.tasks else []
        assert [facts(info) for info in shown] == [facts(info) for info in expected]
