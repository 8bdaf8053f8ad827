"""Rendering results as a rich table, JSON or YAML, the same way for every command (the cells' text
comes from ``policies.format``, as the API's does)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

_PIPE_WIDTH = 240  # piped output is for scripts and logs: do not squeeze it into 80 columns
console = Console(width=None if sys.stdout.isatty() else _PIPE_WIDTH)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else _PIPE_WIDTH)


def emit(
    data: Any, output: str, *, columns: Sequence[str] = (), rows: Sequence[Sequence[Any]] = (), title: str = ""
) -> None:
    """JSON/YAML print ``data`` as is; the table view prints ``rows`` under ``columns``."""
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif output == "yaml":
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    else:
        table = Table(title=title or None, show_edge=False, header_style="bold")
        for number, column in enumerate(columns):
            table.add_column(column, no_wrap=number == 0)
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        console.print(table)


def fail(message: str, code: int) -> int:
    errors.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    return code
