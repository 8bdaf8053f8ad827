"""``fedq jobs`` as squeue lists: states by name in any case (checked against the lifecycle's own),
sorting with jobs lacking the key last, and what an unknown state says."""

from __future__ import annotations

import pytest

from federation.cli.jobs import sort_jobs
from federation.cli.states import FINISHED, UNFINISHED, state_named
from federation.lifecycle.states import TERMINAL_STATES, JobState


def test_the_cli_state_names_are_the_lifecycles() -> None:
    assert set(FINISHED) == {state.value for state in TERMINAL_STATES}
    assert set(UNFINISHED) | set(FINISHED) == {state.value for state in JobState}


def test_a_state_is_named_in_any_case_and_an_unknown_one_says_the_choices() -> None:
    assert state_named("rUnNiNg") == "Running"
    with pytest.raises(ValueError, match="unknown state 'runing': one of Pending, .* Cancelled"):
        state_named("runing")


def test_sorting_by_elapsed_descending_puts_jobs_not_started_last() -> None:
    jobs = [
        {"id": "a", "start_time": 100.0, "end_time": 160.0},  # 60 s
        {"id": "b", "start_time": None, "end_time": None},  # not started
        {"id": "c", "start_time": 150.0, "end_time": None},  # running: 50 s at now=200
        {"id": "d", "start_time": 10.0, "end_time": 200.0},  # 190 s
    ]
    assert [job["id"] for job in sort_jobs(jobs, "-elapsed", 200.0)] == ["d", "a", "c", "b"]
    assert [job["id"] for job in sort_jobs(jobs, "elapsed", 200.0)] == ["c", "a", "d", "b"]
    with pytest.raises(ValueError, match="cannot sort by 'size'"):
        sort_jobs(jobs, "size", 200.0)
