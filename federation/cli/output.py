"""Rendering results as a table, JSON or YAML, the same way for every command (the cells' text comes
from ``policies.format``, as the API's does).

Tables fit the terminal as kubectl's do: a command names its columns with what may go when the
terminal is narrow (``drop``), what only ``-o wide`` shows (``wide``: those that fit; a pipe is 240
columns wide) and what folds onto more lines (``fold``: a reason) instead of widening the table.
rich and yaml are imported on first use: ``fedq COMMAND --help`` needs neither. A table whose columns
fit at their natural widths is written here, as rich would write it (``plain_table``): rich's import
and its first table were a third of ``fedq jobs``; rich squeezes the rest (folding, cell widths).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    console: Console
    errors: Console

PIPE_WIDTH = 240
"""Piped output is for scripts and logs: not squeezed into 80 columns (``COLUMNS`` still sets it)."""
STRUCTURED = ("json", "yaml")
"""The ``--output`` values that print the data as it came, not a table."""
_FOLD_MIN = 20  # a folded column is given at least this much before others are dropped for it
_GAP = 3  # a column's padding on both sides and the rule after it


class Column(NamedTuple):
    """A table column. ``drop``: when the terminal is too narrow, columns go by highest ``drop`` first
    (0: never); ``wide``: only under ``-o wide``; ``fold``: long text wraps onto more lines. (A NamedTuple:
    dataclasses' import, with inspect's, was ~10 ms of every command's start-up.)"""

    header: str
    drop: int = 0
    wide: bool = False
    fold: bool = False


def _console(*, stderr: bool) -> Console:
    """A console on whatever stdout (stderr) is when it prints; its width the terminal's, else
    ``COLUMNS``, else ``PIPE_WIDTH``."""
    from rich.console import Console

    fixed = (sys.stderr if stderr else sys.stdout).isatty() or os.environ.get("COLUMNS", "").isdigit()
    return Console(stderr=stderr, width=None if fixed else PIPE_WIDTH)


def __getattr__(name: str) -> Console:
    """``console`` and ``errors``, made when first imported (PEP 562): rich costs start-up time."""
    if name in ("console", "errors"):
        return _console(stderr=name == "errors")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_structured(output: str) -> bool:
    return output in STRUCTURED


def emit(
    data: Any,
    output: str,
    *,
    columns: Sequence[str | Column] = (),
    rows: Sequence[Sequence[Any]] = (),
    title: str = "",
) -> None:
    """JSON/YAML print ``data`` as is; ``table`` and ``wide`` print ``rows`` under ``columns``, fitted to
    the terminal's width (``wide``: with the wide columns that fit too)."""
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif output == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    else:
        styled = _styled(sys.stdout)
        if styled is not None:
            text = plain_table(columns, rows, title, width=_width(sys.stdout), wide=output == "wide", styled=styled)
            if text is not None:
                sys.stdout.write(text)
                return
        shown = _console(stderr=False)
        shown.print(table(columns, rows, title, width=shown.width, wide=output == "wide"))


def _styled(stream: Any) -> bool | None:
    """Whether rich would write bold and italic to ``stream``: a terminal, unless a dumb one; None where
    rich reads more than that (``FORCE_COLOR``, ``TTY_COMPATIBLE``, a dumb terminal): rich writes those."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return None
    if not stream.isatty():
        return False
    return None if os.environ.get("TERM", "").lower() in ("dumb", "unknown") else True


def _width(stream: Any) -> int:
    """The width ``_console`` gives rich, measured as rich measures a terminal: ``COLUMNS``, else the
    first of stdin, stdout and stderr that is a terminal; a pipe is ``PIPE_WIDTH`` wide."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return int(columns) or 80
    if not stream.isatty():
        return PIPE_WIDTH
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (ValueError, OSError):
            continue
    return 80


def plain_table(
    columns: Sequence[str | Column],
    rows: Sequence[Sequence[Any]],
    title: str,
    *,
    width: int,
    wide: bool,
    styled: bool,
) -> str | None:
    """``table`` as rich prints it (``styled``: its bold header and italic title), when the columns kept
    fit ``width`` at their natural widths and every text is printable ASCII (one character, one cell);
    else None: rich lays it out."""
    specs, texts, kept = _laid_out(columns, rows, width, wide)
    cells = [[row[n].split("\n") for n in kept] for row in texts]
    headers = [specs[n].header for n in kept]
    every = [title, *headers, *(line for row in cells for cell in row for line in cell)]
    if not kept or not all(text.isascii() and text.isprintable() for text in every):
        return None
    widths = [max([len(header), *(len(line) for row in cells for line in row[i])]) for i, header in enumerate(headers)]
    total = sum(widths) + 3 * len(widths) - 1
    if total > width or len(title) > total:
        return None

    def style(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if styled and text else text

    lines = []
    if title:
        left = (total - len(title)) // 2
        lines.append(style(" " * left + title + " " * (total - left - len(title)), "3"))
    if any(headers):
        # rich styles a header's padding apart from its text, and an empty column's two pads as one
        padded = (
            style(" ", "1") + style(h.ljust(w), "1") + style(" ", "1") if w else style("  ", "1")
            for h, w in zip(headers, widths, strict=True)
        )
        lines.append("┃".join(padded))
        lines.append("╇".join("━" * (w + 2) for w in widths))
    for row in cells:
        for at in range(max(len(cell) for cell in row)):
            parts = (cell[at] if at < len(cell) else "" for cell in row)
            lines.append("│".join(f" {part.ljust(w)} " for part, w in zip(parts, widths, strict=True)))
    return "".join(f"{line}\n" for line in lines)


def table(
    columns: Sequence[str | Column], rows: Sequence[Sequence[Any]], title: str, *, width: int, wide: bool
) -> Table:
    """A rich Table of the columns that fit ``width``; cells as text, None as empty."""
    from rich.table import Table
    from rich.text import Text

    specs, texts, kept = _laid_out(columns, rows, width, wide)
    headed = any(specs[number].header for number in kept)
    shown = Table(title=title or None, show_edge=False, show_header=headed, header_style="bold")
    for number in kept:
        spec = specs[number]
        shown.add_column(spec.header, no_wrap=number == kept[0], overflow="fold" if spec.fold else "ellipsis")
    for row in texts:  # as Text: a cell's "[worker-0] ..." is what a job printed, not rich markup
        shown.add_row(*(Text(row[number]) for number in kept))
    return shown


def _laid_out(
    columns: Sequence[str | Column], rows: Sequence[Sequence[Any]], width: int, wide: bool
) -> tuple[list[Column], list[list[str]], list[int]]:
    """The columns, the cells as text (None as empty) and the columns that fit ``width``."""
    specs = [c if isinstance(c, Column) else Column(c) for c in columns]
    texts = [["" if cell is None else str(cell) for cell in row] for row in rows]
    return specs, texts, fitting(specs, texts, width, wide=wide)


def fitting(specs: Sequence[Column], texts: Sequence[Sequence[str]], width: int, *, wide: bool) -> list[int]:
    """The indices of the columns to show: all but the wide ones (``wide``: all), then, while their
    natural widths do not fit ``width``, without one of them: a wide one first, then an empty one, then
    the one of highest ``drop`` (the rightmost of equals). Columns of ``drop`` 0 always stay."""
    kept = [n for n, spec in enumerate(specs) if wide or not spec.wide]

    def natural(n: int) -> int:
        longest = max((len(line) for row in texts for line in row[n].splitlines()), default=0)
        needed = max(len(specs[n].header), longest)
        return min(needed, _FOLD_MIN) if specs[n].fold else needed

    def rank(n: int) -> tuple[bool, bool, int]:
        return (specs[n].wide, not any(row[n] for row in texts), specs[n].drop)

    while sum(natural(n) + _GAP for n in kept) - 1 > width:
        droppable = [n for n in kept if specs[n].drop or specs[n].wide]
        if not droppable:
            break
        kept.remove(max(reversed(droppable), key=rank))
    return kept


def say(message: str, *, stderr: bool = False) -> None:
    """One line of prose, never folded at the console's width: a path, token or command in it must
    stay whole to be copied or grepped (the terminal wraps it if it must)."""
    stream = sys.stderr if stderr else sys.stdout
    if _styled(stream) is None:
        _console(stderr=stderr).print(message, highlight=False, markup=False, soft_wrap=True, emoji=False)
    else:
        stream.write(f"{message}\n")


def fail(message: str, code: int) -> int:
    """``error: MESSAGE`` on stderr (``error:`` in red on a terminal), unfolded as ``say``; returns the exit code."""
    styled = _styled(sys.stderr)
    if styled is None:
        from rich.text import Text

        _console(stderr=True).print(Text.assemble(("error:", "red"), " ", message), soft_wrap=True)
    else:
        sys.stderr.write(f"{_RED_ERROR if styled else 'error:'} {message}\n")
    return code


_RED_ERROR = "\x1b[31merror:\x1b[0m"
"""rich's ``[red]error:[/red]`` on a terminal."""
