"""Logging set-up for the entry points: readable on a terminal, JSON otherwise (or when asked)."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def _stderr_logger(*_: object) -> structlog.PrintLogger:
    """Whatever ``sys.stderr`` is when a line is logged (a test runner swaps it per test)."""
    return structlog.PrintLogger(file=sys.stderr)


def configure_logging(level: str | None = None, *, json: bool | None = None) -> None:
    """``FEDQ_LOG_LEVEL`` (default info) and ``FEDQ_LOG_JSON`` (default: JSON when not a terminal)."""
    name = (level or os.environ.get("FEDQ_LOG_LEVEL", "info")).upper()
    numeric = logging.getLevelName(name)
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {name!r}: use debug, info, warning or error")
    as_json = json if json is not None else os.environ.get("FEDQ_LOG_JSON", "") == "1" or not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
