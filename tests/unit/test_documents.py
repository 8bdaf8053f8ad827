"""The document limits (federation/documents.py): what counts, and that files are held to them too."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from federation.config import load_yaml_file
from federation.documents import DocumentLimits, DocumentRefused, check, parse_json, parse_yaml

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_a_document_never_counts_more_than_its_compact_json(value: object) -> None:
    """The walk sizes a document at most as compact JSON would, so one within the body limit without aliases
    is never over the expanded limit; a string longer than the limit is over it."""
    raw = json.dumps(value, separators=(",", ":")).encode()
    check(value, DocumentLimits(max_expanded_bytes=len(raw)))
    with pytest.raises(DocumentRefused):
        check([value, "x" * len(raw)], DocumentLimits(max_expanded_bytes=len(raw)))


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


tricky_text = st.text(alphabet='[]{}"\\ x\n', max_size=12)
tricky_values = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=12,
)


@given(tricky_values)
def test_a_json_body_nests_as_deep_as_its_value_whatever_its_strings_hold(value: object) -> None:
    """Brackets, quotes and backslashes in strings (escaped in the JSON) are never counted as nesting."""
    raw = json.dumps(value).encode()
    depth = _depth(value)
    assert parse_json(raw, DocumentLimits(max_depth=max(depth, 1))) == value
    if depth > 1:
        with pytest.raises(DocumentRefused, match="nests deeper"):
            parse_json(raw, DocumentLimits(max_depth=depth - 1))


def test_a_large_string_costs_about_what_decoding_it_costs() -> None:
    """The depth check skips a string's plain bytes in one run: it took 48 ms of the API's event loop
    over a 300 KB value (a byte per regex alternation), 100 times json.loads, while every other request
    on the replica waited."""
    raw = json.dumps({"spec": {"env": {"BLOB": "x" * 1_000_000 + '\\"['}}}).encode()

    def fastest(call: Callable[[], object]) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return min(times)

    checked, decoded = fastest(lambda: parse_json(raw, DocumentLimits())), fastest(lambda: json.loads(raw))
    print(f"1 MB string: parse_json {checked * 1000:.1f} ms, json.loads {decoded * 1000:.1f} ms")
    assert checked < 25 * decoded, f"parse_json {checked * 1000:.1f} ms, json.loads {decoded * 1000:.1f} ms"


def test_aliases_count_each_time_they_are_used() -> None:
    once = "a: &a [" + ", ".join(["xxxxxxxx"] * 10) + "]\n"
    assert parse_yaml(once + "b: *a\n", DocumentLimits(max_expanded_bytes=300))["b"][0] == "xxxxxxxx"
    with pytest.raises(DocumentRefused, match="once its YAML aliases are written out") as refused:
        parse_yaml(once + "b: [" + ", ".join(["*a"] * 10) + "]\n", DocumentLimits(max_expanded_bytes=300))
    assert refused.value.status == 413


def test_a_file_is_held_to_the_limits_and_named(tmp_path: Path) -> None:
    bomb = tmp_path / "queues.yaml"
    lines = ["l0: &l0 [" + ", ".join(["x" * 40] * 10) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, 6)]
    bomb.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=r"queues\.yaml: the document is over the limit of 8388608 bytes"):
        load_yaml_file(bomb)
    deep = tmp_path / "deep.yaml"
    deep.write_text("queues:\n" + "".join("  " * n + "- x:\n" for n in range(1, 80)))
    with pytest.raises(ValueError, match=r"deep\.yaml: the document nests deeper than 64 levels"):
        load_yaml_file(deep)
