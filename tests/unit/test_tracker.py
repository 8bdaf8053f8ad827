"""The agent's job tracker: the phase counts it keeps per job match its tasks' latest statuses."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from member_agent.backends.base import TaskPhase, TaskStatus
from member_agent.tracker import LocalJob


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(list(TaskPhase))), max_size=30))
def test_phase_counts_are_those_of_the_latest_status_of_each_task(reports: list[tuple[int, TaskPhase]]) -> None:
    job = LocalJob("j", 1)
    for index, phase in reports:
        job.record(TaskStatus("j", "main", index, 1, phase))
    assert +job.phases == Counter(status.phase for status in job.tasks.values())
