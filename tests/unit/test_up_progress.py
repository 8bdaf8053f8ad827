"""``fedq up``'s live table: every job of a small workload, a summary for a big one."""

from __future__ import annotations

from typing import Any

from federation.up import MAX_ROWS, _progress


def jobs(states: list[str]) -> list[dict[str, Any]]:
    return [{"id": str(n), "name": "j", "tenant": "alice", "state": s} for n, s in enumerate(states)]


def test_a_small_workload_is_listed_job_by_job() -> None:
    table = _progress(jobs(["Running", "Succeeded", "Pending"]))
    assert table.row_count == 3
    assert table.caption is None


def test_a_big_workload_shows_unfinished_jobs_first_and_counts_by_state() -> None:
    states = ["Succeeded"] * 90 + ["Running"] * 5 + ["Pending"] * 10 + ["Failed"] * 2
    table = _progress(jobs(states))
    assert table.row_count == MAX_ROWS
    shown = list(table.columns[2].cells)
    assert shown[:15] == ["Running"] * 5 + ["Pending"] * 10
    assert set(shown[15:]) <= {"Succeeded", "Failed"}
    assert (
        table.caption == f"{107 - MAX_ROWS} more jobs not shown; all 107: Failed 2, Pending 10, Running 5, Succeeded 90"
    )
