"""``fedq``'s tables without rich (issue 36, point 4): a table whose columns fit at their natural widths is
written by ``output.plain_table``, byte for byte as rich writes it (on a terminal too: its bold header and
italic title), so the one-shot commands need not import rich. Seeded random tables of the shapes the CLI
makes (folded, wide and dropped columns, empty ones, multi-line cells, titles, no rows) are rendered both
ways and compared; a cell's brackets are text in both, never rich markup."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from federation.cli import output
from federation.cli.output import Column, plain_table, table

WORDS = ["a", "bench", "1m8zzjtydcfr3wr", "research.vision", "Pending", "", "2m27s ago", "x y z", "two\nlines"]
WORDS += ["held by admin/bootstrap", "end\n", "\nstart", "a  b", " lead", "trail ", "[worker-0] epoch 3", "[b]"]
HEADERS = ["ID", "NAME", "", "STATE", "REASON"]


def by_rich(columns: list[Column], rows: list[list[object]], title: str, width: int, wide: bool, tty: bool) -> str:
    shown = Console(width=width, force_terminal=tty, file=io.StringIO(), color_system="standard" if tty else None)
    shown.print(table(columns, rows, title, width=width, wide=wide))
    value: str = shown.file.getvalue()  # type: ignore[attr-defined]
    return value


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_a_table_that_fits_is_written_as_rich_writes_it(tty: bool) -> None:
    draw = random.Random(36)
    compared = differ = 0
    for _ in range(1500):
        count = draw.randint(1, 6)
        columns = [
            Column(draw.choice(HEADERS), drop=draw.randint(0, 3), wide=draw.random() < 0.2, fold=draw.random() < 0.3)
            for _ in range(count)
        ]
        rows = [[draw.choice([*WORDS, None, 5, 3.5]) for _ in range(count)] for _ in range(draw.randint(0, 4))]
        title, width = draw.choice(["", "", "events", "why is x Pending?"]), draw.choice([20, 40, 80, 240])
        wide = draw.random() < 0.3
        mine = plain_table(columns, rows, title, width=width, wide=wide, styled=tty)
        if mine is None:
            continue
        compared += 1
        differ += mine != by_rich(columns, rows, title, width, wide, tty)
    print(f"{compared} tables written without rich, {differ} differ from rich's")
    assert compared > 1000 and differ == 0, f"{differ} of {compared} differ"


def test_what_does_not_fit_or_is_not_ascii_is_left_to_rich() -> None:
    reason = Column("REASON", fold=True)
    assert plain_table(["ID", reason], [["a", "x" * 30]], "", width=20, wide=False, styled=False) is None
    assert plain_table(["ID", "NAME"], [["a", "日本"]], "", width=80, wide=False, styled=False) is None
    assert plain_table(["ID"], [["a\tb"]], "", width=80, wide=False, styled=False) is None


def test_a_job_prints_its_bracketed_task_tags(capsys: pytest.CaptureFixture[str]) -> None:
    """rich read ``[worker-0]`` as markup and dropped it from ``fedq job``'s last output lines."""
    lines = [["[worker-0] epoch 1"], ["[worker-1] epoch 1"]]
    output.emit({}, "table", columns=[Column("OUTPUT", fold=True)], rows=lines)
    printed = capsys.readouterr().out
    assert "[worker-0] epoch 1" in printed and "[worker-1] epoch 1" in printed, printed
    assert "[worker-0] epoch 1" in by_rich([Column("OUTPUT", fold=True)], lines, "", 20, False, False)
