"""The store upkeep settings: durations read and shown the same way, bad values name their field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from federation.config import FederationConfig
from policies.units import format_duration, parse_duration


def test_upkeep_durations_parse_and_default() -> None:
    config = FederationConfig.model_validate({"store": {"compactEvery": "10m", "keepFinished": "2d"}})
    assert (config.store.compact_every, config.store.keep_finished) == (600.0, 172800.0)
    assert (FederationConfig().store.compact_every, FederationConfig().store.keep_finished) == (300.0, 604800.0)


@pytest.mark.parametrize(("field", "value"), [("keepFinished", "0s"), ("compactEvery", "soon"), ("keepFinished", -5)])
def test_a_bad_upkeep_duration_names_its_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        FederationConfig.model_validate({"store": {field: value}})
    assert [err["loc"] for err in info.value.errors()] == [("store", field)]


@pytest.mark.parametrize(
    ("seconds", "shown"), [(604800, "7d"), (5400, "1h30m"), (90, "1m30s"), (1.5, "1.5s"), (7200, "2h")]
)
def test_durations_are_shown_largest_unit_first(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.0390625, "0.0390625s"), (1234.56789012, "1234.56789012s"), (1e-7, "0.0000001s")]
)
def test_a_duration_with_more_than_six_decimals_is_shown_in_full(seconds: float, shown: str) -> None:
    """Found by the round trip below in a long run: six fixed decimals showed 0.0390625 as 0.039062s,
    1234.56789012 as 1234.56789s (within the old relative tolerance) and 1e-7 as 0s."""
    assert format_duration(seconds) == shown
    assert parse_duration(shown) == seconds


@given(st.integers(min_value=1, max_value=10**9) | st.floats(min_value=0.001, max_value=1e9, allow_nan=False))
def test_a_shown_duration_reads_back_as_itself(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
