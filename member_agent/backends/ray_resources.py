"""Translation between fedq's Kubernetes-style resource names and Ray's.

fedq says ``cpu``, ``memory`` (bytes) and ``nvidia.com/gpu``; Ray says ``CPU``, ``memory`` and
``GPU``. Other resources keep their names. Ray's bookkeeping entries — ``node:<ip>``,
``accelerator_type:<t>``, ``object_store_memory`` and the per-placement-group ``*_group_*``
resources — are not capacity a task can request, so they are left out of node views.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from federation.models.resources import GPU

_TO_RAY = {"cpu": "CPU", "memory": "memory", GPU: "GPU"}
_FROM_RAY = {ray_name: name for name, ray_name in _TO_RAY.items()}
_INTERNAL = {"object_store_memory"}
_GROUP_RESOURCE = re.compile(r"_group_(?:\d+_)?[0-9a-f]{16,}$")


@dataclass(frozen=True)
class RayRequest:
    """A task's request as Ray's actor options and as a placement-group bundle."""

    num_cpus: float = 0.0
    num_gpus: float = 0.0
    memory: float = 0.0
    custom: dict[str, float] = field(default_factory=dict)

    def bundle(self) -> dict[str, float]:
        named = {"CPU": self.num_cpus, "GPU": self.num_gpus, "memory": self.memory, **self.custom}
        return {name: amount for name, amount in named.items() if amount > 0}


def to_ray(resources: Mapping[str, float]) -> RayRequest:
    """fedq names to Ray's; zero and negative amounts are dropped."""
    custom: dict[str, float] = {}
    known: dict[str, float] = {}
    for name, amount in resources.items():
        if amount <= 0:
            continue
        if name in _TO_RAY:
            known[_TO_RAY[name]] = amount
        else:
            custom[name] = amount
    return RayRequest(
        num_cpus=known.get("CPU", 0.0),
        num_gpus=known.get("GPU", 0.0),
        memory=known.get("memory", 0.0),
        custom=custom,
    )


def from_ray(resources: Mapping[str, float]) -> dict[str, float]:
    """Ray's resource map to fedq names, without Ray's internal entries."""
    return {
        _FROM_RAY.get(name, name): float(amount)
        for name, amount in resources.items()
        if ":" not in name and name not in _INTERNAL and not _GROUP_RESOURCE.search(name)
    }
