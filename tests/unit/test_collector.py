"""The collector setting a long-running scheduler process applies once its state is loaded."""

from __future__ import annotations

import gc

import pytest

from federation.collector import FULL_PASS_SPACING, keep_long_lived, loading


def test_what_is_alive_is_frozen_and_full_passes_are_spaced() -> None:
    before = gc.get_threshold()
    alive = [[] for _ in range(10)]  # containers the collector tracks
    try:
        keep_long_lived()
        assert gc.get_freeze_count() >= len(alive)
        assert gc.get_threshold() == (before[0], before[1], FULL_PASS_SPACING)
    finally:
        gc.set_threshold(*before)


def test_a_load_runs_without_passes_and_what_it_built_is_frozen() -> None:
    before = gc.get_threshold()
    passes = gc.get_stats()
    try:
        with loading():
            assert not gc.isenabled()
            built = [[i] for i in range(50_000)]  # many times the young generation's threshold
            assert [s["collections"] for s in gc.get_stats()] == [s["collections"] for s in passes]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_failed_load_turns_the_collector_back_on_and_freezes_nothing() -> None:
    gc.unfreeze()
    with pytest.raises(KeyError), loading():
        raise KeyError("a record")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
