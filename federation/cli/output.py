"""Rendering results as a rich table, JSON or YAML, the same way for every command."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

_PIPE_WIDTH = 240  # piped output is for scripts and logs: do not squeeze it into 80 columns
console = Console(width=None if sys.stdout.isatty() else _PIPE_WIDTH)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else _PIPE_WIDTH)


def when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


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


def format_quantity(resource: str, amount: float) -> str:
    """Memory-like quantities in binary units, the rest as plain numbers."""
    if resource in ("memory", "ephemeral-storage") or resource.endswith("memory"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(amount) >= size:
                return f"{amount / size:.4g}{unit}"
    return f"{amount:.4g}"
