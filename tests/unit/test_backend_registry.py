"""Backends are chosen by their registered name: the agent's config, its CLI and the federation's
submit check all read the one registry."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import ValidationError

from federation.cli import build_parser
from member_agent.backends import BACKENDS, Backend, command_backends, create_backend, register_backend
from member_agent.backends.simulated import SimulatedBackend
from member_agent.config import AgentConfig
from policies import ManualClock
from policies.clock import Clock


@pytest.fixture
def extra_backend() -> Iterator[str]:
    @register_backend("extra", runs_commands=True)
    def _extra(settings: Mapping[str, Any], clock: Clock) -> Backend:
        return SimulatedBackend.from_config(settings, clock)

    yield "extra"
    del BACKENDS["extra"]


def test_the_built_in_backends_and_which_need_a_command() -> None:
    assert list(BACKENDS) == ["simulated", "ray", "kubernetes"]
    assert command_backends() == {"ray"}
    assert create_backend("simulated", {}, ManualClock(0)).name == "simulated"


def test_an_unknown_backend_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ValidationError, match="unknown backend 'slurm': use simulated, ray, kubernetes"):
        AgentConfig(backend="slurm")
    with pytest.raises(ValueError, match="unknown backend 'slurm'"):
        create_backend("slurm", {}, ManualClock(0))


def test_a_registered_backend_is_accepted_everywhere(extra_backend: str) -> None:
    assert AgentConfig(backend=extra_backend).backend == extra_backend
    args = build_parser().parse_args(["agent", "run", "--name", "c1", "--backend", extra_backend])
    assert args.backend == extra_backend
    assert isinstance(create_backend(extra_backend, {}, ManualClock(0)), SimulatedBackend)
    assert extra_backend in command_backends()


def test_bad_ray_settings_are_refused_before_ray_starts() -> None:
    with pytest.raises(ValueError, match=r"unknown ray backend settings \['adress'\]"):
        create_backend("ray", {"adress": "ray://x:10001"}, ManualClock(0))
