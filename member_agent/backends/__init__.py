"""Backends a member agent schedules onto, registered by name; each module is imported only when
chosen (Ray and the Kubernetes client are heavy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from member_agent.backends.base import Backend
from member_agent.backends.registry import (
    BACKENDS,
    backend_name,
    command_backends,
    create_backend,
    honoured_fields,
    register_backend,
)
from policies.clock import Clock

__all__ = [
    "BACKENDS",
    "Backend",
    "backend_name",
    "command_backends",
    "create_backend",
    "honoured_fields",
    "register_backend",
]
IMAGE_FIELDS = frozenset({"image", "imagePullPolicy", "workingDir"})
"""The container fields of a task (federation.capabilities.FIELDS)."""


# The simulated backend runs nothing, so it takes every field and ignores it.
@register_backend("simulated", honours=IMAGE_FIELDS | {"runtimeEnv"})
def _simulated(settings: Mapping[str, Any], clock: Clock) -> Backend:
    from member_agent.backends.simulated import SimulatedBackend

    return SimulatedBackend.from_config(settings, clock)


@register_backend("ray", runs_commands=True, honours=frozenset({"runtimeEnv"}))
def _ray(settings: Mapping[str, Any], clock: Clock) -> Backend:
    """In a child process: Ray's driver aborts its process when the head restarts (``isolated``)."""
    from member_agent.backends.isolated import BackendProcess
    from member_agent.backends.ray_backend import RayBackend

    RayBackend.check_settings(settings)
    return BackendProcess("ray", "member_agent.backends.ray_backend:RayBackend", settings, clock)


@register_backend("kubernetes", honours=IMAGE_FIELDS)
def _kubernetes(settings: Mapping[str, Any], clock: Clock) -> Backend:
    from member_agent.backends.kubernetes import KubernetesBackend

    return KubernetesBackend.from_config(settings, clock=clock)
