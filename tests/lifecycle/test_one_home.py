"""Acceptance of issue 26: a job record's state is set in the lifecycle module and nowhere else.

Scans the production packages' syntax trees for the three ways a record's state could be set: an
attribute assignment of a ``JobState`` (``record.state = JobState.X``), a ``model_copy`` whose
update names ``state``, and a ``JobRecord(...)`` built with a ``state``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("federation", "member_agent", "policies")
HOME = ROOT / "federation" / "lifecycle"


def _mentions_job_state(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "JobState" for n in ast.walk(node))


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def state_writes(tree: ast.AST) -> list[int]:
    """Line numbers where ``tree`` sets a job record's state."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            sets_state = any(isinstance(t, ast.Attribute) and t.attr == "state" for t in targets)
            if sets_state and node.value is not None and _mentions_job_state(node.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            name = _called(node)
            for keyword in node.keywords:
                if name == "JobRecord" and keyword.arg == "state":
                    lines.append(node.lineno)
                if name == "model_copy" and keyword.arg == "update" and isinstance(keyword.value, ast.Dict):
                    keys = [k.value for k in keyword.value.keys if isinstance(k, ast.Constant)]
                    if "state" in keys:
                        lines.append(node.lineno)
    return lines


def test_only_the_lifecycle_sets_a_job_records_state() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if HOME in path.parents:
                continue
            for line in state_writes(ast.parse(path.read_text(), str(path))):
                found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == []


def test_the_scan_finds_each_kind_of_write() -> None:
    """The scan is not vacuous: each of the three ways is found, and the lifecycle's own are."""
    code = """
record.state = JobState.RUNNING
new = old.model_copy(update={"state": target, "reason": why})
made = JobRecord(id="j", state=JobState.FAILED)
job.state = state  # an agent's own view of its job, not a record: not counted
"""
    assert state_writes(ast.parse(code)) == [2, 3, 4]
    machine = HOME / "machine.py"
    assert state_writes(ast.parse(machine.read_text()))
