"""Built-in actions; importing this package registers them by name."""

from policies.actions import allocate, backfill, enqueue, preempt, reclaim, reserve  # noqa: F401
