"""Resource maps: resource name → quantity in base units (cores, bytes, devices).

Names follow Kubernetes' resource-name rules so the same job spec is valid on every backend.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema

from federation.models.stored import stored
from policies.units import parse_quantity

_RESOURCE_NAME = re.compile(
    r"^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
MAX_RESOURCE_NAME = 253
_NAMES_SEEN: set[str] = set()
"""Names already found valid: a report names the same few resources for each of its thousands of runs."""
_NAMES_KEPT = 4096
MAX_QUANTITY = 2.0**63
"""The largest quantity of any resource (Kubernetes keeps quantities in 64 bits): 1e308 cpus would sum to
infinity over a job's tasks, and infinity is no amount a cluster can compare."""
GPU = "nvidia.com/gpu"
"""fedq's name for a GPU on every backend; a backend translates it to its own (Ray: ``GPU``)."""
ALIASES = {"gpu": GPU}
STANDARD_RESOURCES = ("cpu", "memory", GPU, "ephemeral-storage")
"""Resource names every job may ask for whatever the joined clusters report (others must be reported)."""


def parse_resources(value: Any) -> dict[str, float]:
    """Validate a resource map, parsing quantity strings; errors name the offending resource."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("resources must be a mapping of resource name to quantity, e.g. {cpu: '2', memory: 4Gi}")
    parsed: dict[str, float] = {}
    name: str
    for name, quantity in value.items():
        if name not in _NAMES_SEEN:
            if not isinstance(name, str) or len(name) > MAX_RESOURCE_NAME or not _RESOURCE_NAME.match(name):
                raise ValueError(f"invalid resource name {name!r}: use names like 'cpu', 'memory', 'nvidia.com/gpu'")
            if len(_NAMES_SEEN) < _NAMES_KEPT:
                _NAMES_SEEN.add(name)
        if type(quantity) is float:  # what agents send, thousands a report: no call
            amount = float(quantity)
        else:
            try:
                amount = parse_quantity(quantity)
            except ValueError as exc:
                raise ValueError(f"resource {name!r}: {exc}") from None
        if not math.isfinite(amount):
            raise ValueError(f"resource {name!r}: quantity must be finite")
        if amount > MAX_QUANTITY:
            raise ValueError(f"resource {name!r}: quantity must be at most 2^63 (got {quantity!r})")
        if amount < 0:
            raise ValueError(f"resource {name!r}: quantity must not be negative (got {quantity!r})")
        canonical = ALIASES.get(name, name)
        if canonical in parsed:
            aliases = ", ".join(repr(alias) for alias, target in ALIASES.items() if target == canonical)
            raise ValueError(f"resource {canonical!r} is given twice ({aliases} is another name for it): give it once")
        parsed[canonical] = amount
    return parsed


def _resources(value: Any, info: ValidationInfo) -> Any:
    return value if stored(info) else parse_resources(value)


Resources = Annotated[
    dict[str, float],
    BeforeValidator(_resources),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": _RESOURCE_NAME.pattern, "maxLength": MAX_RESOURCE_NAME},
            "additionalProperties": {
                "anyOf": [{"type": "number", "minimum": 0, "maximum": MAX_QUANTITY}, {"type": "string"}]
            },
        },
        mode="validation",
    ),
]
