"""Job state names as the CLI takes them (``fedq jobs --state running``), without importing the
lifecycle (pydantic and the state machine cost more start-up than ``fedq jobs`` may take); the
lifecycle's ``JobState`` is their home and tests/unit/test_cli_listing.py holds these to it."""

from __future__ import annotations

UNFINISHED = ("Pending", "Reserved", "Unschedulable", "Dispatched", "Admitted", "Running")
FINISHED = ("Succeeded", "Failed", "Cancelled")


def state_named(text: str) -> str:
    """A state by its name in any case ('running' -> 'Running'); ValueError naming the choices."""
    for name in (*UNFINISHED, *FINISHED):
        if name.lower() == text.strip().lower():
            return name
    raise ValueError(f"unknown state {text!r}: one of {', '.join((*UNFINISHED, *FINISHED))} (any case)")
