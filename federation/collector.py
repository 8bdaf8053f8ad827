"""The cyclic garbage collector, set for a process that holds a large state for as long as it runs.

A scheduler keeps every job in memory (the federation's state, a simulation's trace and results).
CPython's collector would walk all of it again at each full pass, so what is alive once the state is
loaded is frozen out of its passes. Once frozen, though, CPython (3.11) decides whether a full pass
is due by the unfrozen objects alone (a full pass when those that survived young passes since the
last full one exceed a quarter of its survivors), so a state that grows (jobs dispatched, run and
finished) gets a full pass at nearly every chance it has: one per 10 middle-generation passes by
default. Spacing those chances ten times further apart keeps full passes rare; young passes still
reclaim the short-lived cycles, and a full pass still comes.

The API server (``fedq server``) sets its collector the same way at start-up: its caches grow with the
jobs, and under a hundred agents' reports a full pass (74 ms on average at 100,000 jobs) came about every 20 s.

While such a state is being loaded, nearly everything made stays alive, so the collector's passes
find nothing to free, and each full pass walks everything loaded so far: the load runs with the
collector off (``loading``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Middle-generation passes between two chances of a full pass (CPython's default is 10).
FULL_PASS_SPACING = 100


def keep_long_lived() -> None:
    """Freeze what is alive now out of the collector's passes, and space its full passes (the
    effect on dispatch and replays is in bench/HISTORY.md)."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_PASS_SPACING)


def keep_piled_up() -> None:
    """Freeze what a long run has piled up since the last freeze (a simulation's finished jobs stay to
    its end), once a full pass has freed the cycles that would be frozen with it (frozen objects are
    not walked, so that pass costs one step's objects). Frozen in steps, no full pass walks the whole
    run: over the whole SDSC-SP2 replay its 26 full passes took 25 s (bench/HISTORY.md)."""
    gc.collect()
    gc.freeze()


@contextmanager
def loading() -> Iterator[None]:
    """Build a long-lived state with the collector off, then keep it out of the collector's passes.

    At 100,000 jobs, the passes made a record's parse 4x and its apply 1.6x slower (bench/HISTORY.md).
    A load that fails leaves its partial state to the collector, which is on again either way."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        keep_long_lived()
    finally:
        if enabled:
            gc.enable()
