"""The collector setting a long-running scheduler process applies once its state is loaded."""

from __future__ import annotations

import gc

from federation.collector import FULL_PASS_SPACING, keep_long_lived


def test_what_is_alive_is_frozen_and_full_passes_are_spaced() -> None:
    before = gc.get_threshold()
    alive = [[] for _ in range(10)]  # containers the collector tracks
    try:
        keep_long_lived()
        assert gc.get_freeze_count() >= len(alive)
        assert gc.get_threshold() == (before[0], before[1], FULL_PASS_SPACING)
    finally:
        gc.set_threshold(*before)
