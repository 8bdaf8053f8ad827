"""Issue 32, acceptance 3: the simulator takes the service's scheduling turn and interprets no effect of
its own; both read the turn from ``federation.scheduler.turn``."""

from __future__ import annotations

import ast
import inspect

import federation.scheduler.service as service
import federation.simulator.engine as engine

EFFECTS = {"Assign", "Unassign", "StopOrder", "DropStopOrder", "RunStarted", "RunStopped", "Requeued"}
TURN_EVENTS = {"Dispatch", "Reclaim", "Mark", "ClusterLost", "NotAdmitted", "DependencyUnmet"}


def _tree(module: object) -> ast.Module:
    return ast.parse(inspect.getsource(module))  # type: ignore[arg-type]


def _called(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _isinstance_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
            names |= {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
    return names


def _imported(tree: ast.Module) -> set[str]:
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_engine_takes_the_shared_turn_and_interprets_no_effect() -> None:
    tree = _tree(engine)
    assert {"Turn", "run_sync", "carry_out"} <= _imported(tree)
    assert "run" in _called(tree) and "run_sync" in _called(tree)
    assert not _isinstance_names(tree) & (EFFECTS | TURN_EVENTS)
    assert not _imported(tree) & (TURN_EVENTS | {"GlobalScheduler", "marks", "CyclePlan"})
    assert not {"marks", "GlobalScheduler"} & _called(tree)


def test_the_service_takes_the_same_turn() -> None:
    tree = _tree(service)
    assert "Turn" in _imported(tree)
    assert not _imported(tree) & (TURN_EVENTS | {"GlobalScheduler", "marks", "change_for", "global_conf"})


def test_the_eviction_window_has_one_home() -> None:
    for module in (engine, service):
        source = inspect.getsource(module)
        assert "max_per_minute" not in source and "RECLAIM_WINDOW" not in source
