"""A three-level tree with uneven weights: every slice worked out by hand, through ``fedq simulate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance.cases import Rows, backlog, scenario, simulate, started_at

TREE = [
    {
        "name": "a",
        "weight": 3,
        "children": [
            {"name": "a1", "weight": 1, "tenants": ["u"]},
            {
                "name": "a2",
                "weight": 2,
                "children": [
                    {"name": "x", "weight": 1, "tenants": ["u"]},
                    {"name": "y", "weight": 3, "tenants": ["u"]},
                ],
            },
        ],
    },
    {
        "name": "b",
        "weight": 1,
        "children": [
            {"name": "b1", "weight": 1, "tenants": ["u"]},
            {"name": "b2", "weight": 1, "tenants": ["u"]},
            {"name": "b3", "weight": 2, "tenants": ["u"]},
        ],
    },
]
LEAVES = ["a.a1", "a.a2.x", "a.a2.y", "b.b1", "b.b2", "b.b3"]


def tree_case() -> dict[str, Any]:
    jobs = [j for i, leaf in enumerate(LEAVES) for j in backlog(f"j{i}-", "u", leaf, 100, 0)]
    return scenario(96, TREE, jobs)


def check_tree(rows: Rows) -> None:
    # Nobody has used anything: every RUP is 0.5, so EUP = 0.5 / weight and slices go as weights.
    # Level 1 (3 : 1 of 96): a 72, b 24.
    # Level 2: a's 72 as 1 : 2 -> a1 24, a2 48; b's 24 as 1 : 1 : 2 -> b1 6, b2 6, b3 12.
    # Level 3: a2's 48 as 1 : 3 -> x 12, y 36.
    # Every leaf wants 100, more than its slice, and the slices are whole: each starts exactly it.
    expected = {"a.a1": 24, "a.a2.x": 12, "a.a2.y": 36, "b.b1": 6, "b.b2": 6, "b.b3": 12}
    assert sum(expected.values()) == 96
    assert started_at(rows, 0) == expected


def test_three_levels_with_uneven_weights(tmp_path: Path) -> None:
    check_tree(simulate(tree_case(), tmp_path))
