"""The local scheduler's kept running jobs and nodes: what it hands a session matches a rebuild."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from federation.models import JobSpecBody, TaskSpec
from member_agent.backends.base import NodeView, TaskPhase, TaskReport
from member_agent.local_scheduler import LocalScheduler, _job_info
from member_agent.node_table import node_info
from member_agent.tracker import LocalJob
from policies import JobInfo, ManualClock
from policies import resources as res

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
            job.mark_placed([("main", index)])  # launched as room allowed (an elastic job's tasks)
            job.record(TaskReport("j", "main", index, 1, phase, node=node, started_at=started))
        shown = scheduler._running_infos([job])
        expected = [_job_info(job)] if job.tasks else []
        assert [facts(info) for info in shown] == [facts(info) for info in expected]


NODE_CHANGES = st.tuples(
    st.integers(0, 2), st.sampled_from([1.0, 2.0, 4.0]), st.sampled_from([0.0, 1.0, 0.5, 0.1]), st.booleans()
)


@given(st.lists(NODE_CHANGES, max_size=8))
def test_kept_node_sizes_and_capacity_follow_the_views_as_a_rebuild_would(
    changes: list[tuple[int, float, float, bool]],
) -> None:
    views = [NodeView(f"n{i}", {"cpu": 2.0, "memory": 8.0}) for i in range(3)]
    scheduler = LocalScheduler(ManualClock(0.0))
    spec = JobSpecBody(queue="default", tasks=[TaskSpec(resources={"cpu": 3.0})])
    wide = LocalJob("w", 1, queue="default", spec=spec)
    for node, cpu, used, cordoned in changes:
        views[node] = NodeView(f"n{node}", {"cpu": cpu, "memory": 8.0}, {"cpu": used}, unschedulable=cordoned)
        fresh = LocalScheduler(ManualClock(0.0))
        assert scheduler.never_fits([wide], views) == fresh.never_fits([wide], views)
        scheduler.plan([wide], [], views)
        schedulable = [node_info(v) for v in views if not v.unschedulable]
        expected = res.total(n.allocatable for n in schedulable)
        assert scheduler.nodes.capacity() == expected  # to the last bit, and in the same key order
        assert list(scheduler.nodes.capacity()) == list(expected)
