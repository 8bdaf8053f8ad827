"""Backends a member agent schedules onto; each is imported only when chosen (Ray and the
Kubernetes client are heavy)."""

from __future__ import annotations

from typing import Any

from member_agent.backends.base import Backend, LaunchError, NodeView, TaskLaunch, TaskPhase, TaskReport
from policies.clock import Clock

__all__ = ["Backend", "LaunchError", "NodeView", "TaskLaunch", "TaskPhase", "TaskReport", "create_backend"]


def create_backend(kind: str, settings: dict[str, Any], clock: Clock) -> Backend:
    if kind == "simulated":
        from member_agent.backends.simulated import SimulatedBackend

        return SimulatedBackend.from_config(settings, clock)
    if kind == "ray":
        from member_agent.backends.ray_backend import RayBackend

        unknown = set(settings) - {"address"}
        if unknown:
            raise ValueError(f"unknown ray backend settings {sorted(unknown)}: only 'address' is accepted")
        return RayBackend(address=settings.get("address"), clock=clock)
    if kind == "kubernetes":
        from member_agent.backends.kubernetes import KubernetesBackend

        return KubernetesBackend.from_config(settings, clock=clock)
    raise ValueError(f"unknown backend {kind!r}: use simulated, ray or kubernetes")
