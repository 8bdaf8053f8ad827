"""Backends are built by name from the agent's config, as plugins are from the session conf; the
config's and the CLI's choices are the registered names.

A backend registers a factory, not its class, so that its module (Ray, the Kubernetes client: heavy)
is imported only when chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from member_agent.backends.base import Backend
from policies.clock import Clock

Factory = Callable[[Mapping[str, Any], Clock], Backend]


@dataclass(frozen=True)
class BackendKind:
    build: Factory
    runs_commands: bool  # starts a task by running its command, so has nothing to run without one
    honours: frozenset[str]  # the optional job fields it runs as asked (federation.capabilities.FIELDS)


BACKENDS: dict[str, BackendKind] = {}


def register_backend(
    name: str, *, runs_commands: bool = False, honours: frozenset[str] = frozenset()
) -> Callable[[Factory], Factory]:
    def register(build: Factory) -> Factory:
        BACKENDS[name] = BackendKind(build, runs_commands, honours)
        return build

    return register


def backend_name(name: str) -> str:
    """``name`` if a backend is registered under it: what the agent's config validates ``backend`` with."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: use {', '.join(BACKENDS)}")
    return name


def create_backend(name: str, settings: Mapping[str, Any], clock: Clock) -> Backend:
    return BACKENDS[backend_name(name)].build(settings, clock)


def honoured_fields(name: str) -> frozenset[str]:
    """The optional job fields backend ``name`` honours (none for a name not registered here): what its
    agent reports, so the federation sends it no job it would run wrong (``federation.capabilities``)."""
    kind = BACKENDS.get(name)
    return kind.honours if kind is not None else frozenset()


def command_backends() -> frozenset[str]:
    """Backends that cannot start a task without a ``command`` (Kubernetes runs the image's entrypoint,
    the simulator its ``runtime``): the federation refuses at submit a job only such clusters could run."""
    return frozenset(name for name, kind in BACKENDS.items() if kind.runs_commands)
