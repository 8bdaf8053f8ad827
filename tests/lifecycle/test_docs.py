"""docs/architecture.md's lifecycle table is the lifecycle's own (``MOVES``), not a copy that drifts."""

from __future__ import annotations

from pathlib import Path

from federation.lifecycle import MOVES, JobState

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
ORDER = list(JobState)


def table() -> str:
    def names(states: frozenset[JobState]) -> str:
        return ", ".join(s.value for s in sorted(states, key=ORDER.index))

    rows = ["| event | from | to | what follows |", "|---|---|---|---|"]
    rows += [f"| {m.event} | {names(m.sources)} | {names(m.targets)} | {m.effects} |" for m in MOVES.values()]
    return "\n".join(rows)


def test_the_architecture_page_shows_the_lifecycle_table() -> None:
    assert table() in DOC.read_text()
