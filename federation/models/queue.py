"""The queue tree: weights, guarantees, caps and who may submit where (``configs/queues.yaml``).

Paths are dotted (``research.vision``); the implicit root is ``root`` and may be written or left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from federation.models.job import documented_name
from federation.models.numbers import Weight, positive_seconds
from federation.models.resources import Resources
from policies.format import format_quantity

_QUEUE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$")
_TENANT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")


def check_tenant_name(name: str) -> str:
    if len(name) > 63 or not _TENANT_NAME.match(name):
        raise ValueError(f"invalid tenant name {name!r}: lower-case letters, digits, '-', '_', '.'")
    return name


class QueueConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    name: Annotated[str, documented_name(_QUEUE_NAME, 63)]
    weight: Weight = 1.0
    guarantee: Resources = Field(default_factory=dict)
    cap: Resources = Field(default_factory=dict)
    accept_surplus: bool = Field(True, alias="acceptSurplus")
    priority_factor: Weight = Field(1.0, alias="priorityFactor")
    half_life: float | None = Field(None, alias="halfLife")
    tenants: list[Annotated[str, Field(json_schema_extra={"pattern": _TENANT_NAME.pattern, "maxLength": 63})]] = Field(
        default_factory=list
    )
    children: list[QueueConfig] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > 63 or not _QUEUE_NAME.match(value):
            raise ValueError(f"invalid queue name {value!r}: lower-case letters, digits, '-', '_'")
        return value

    @field_validator("half_life", mode="before")
    @classmethod
    def _half_life(cls, value: Any) -> float | None:
        return None if value is None else positive_seconds(value)

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, value: list[str]) -> list[str]:
        return [check_tenant_name(name) for name in value]

    @model_validator(mode="after")
    def _limits(self) -> QueueConfig:
        for resource, amount in self.guarantee.items():
            cap = self.cap.get(resource)
            if cap is not None and amount > cap:
                least, most = format_quantity(resource, amount), format_quantity(resource, cap)
                raise ValueError(f"queue {self.name!r}: guarantee of {resource} ({least}) exceeds its cap ({most})")
        names = [child.name for child in self.children]
        if len(set(names)) != len(names):
            raise ValueError(f"queue {self.name!r}: child queue names must be unique")
        for resource, amount in self.guarantee.items():
            given = sum(child.guarantee.get(resource, 0.0) for child in self.children)
            if self.children and given > amount + 1e-9:
                raise ValueError(
                    f"queue {self.name!r}: children guarantee {format_quantity(resource, given)} {resource}, "
                    f"more than its own {format_quantity(resource, amount)}"
                )
        if self.children and self.tenants:
            raise ValueError(f"queue {self.name!r}: only leaf queues take tenants; move them to a child queue")
        return self


class QueueTreeConfig(BaseModel):
    """The document in ``configs/queues.yaml`` and the body of ``PUT /v1/queues``."""

    model_config = ConfigDict(extra="forbid")

    queues: list[QueueConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> QueueTreeConfig:
        names = [queue.name for queue in self.queues]
        if len(set(names)) != len(names):
            raise ValueError("top-level queue names must be unique")
        return self


class QueueNode:
    """A queue in the resolved tree, with its dotted path and parent."""

    __slots__ = ("config", "path", "parent", "children")

    def __init__(self, config: QueueConfig, path: str, parent: QueueNode | None) -> None:
        self.config = config
        self.path = path
        self.parent = parent
        self.children: list[QueueNode] = []

    @property
    def is_leaf(self) -> bool:
        return not self.children


class QueueTree:
    """Lookup by path, leaves, and tenant permissions over a validated ``QueueTreeConfig``."""

    def __init__(self, config: QueueTreeConfig) -> None:
        self.config = config
        self.nodes: dict[str, QueueNode] = {}
        for queue in config.queues:
            self._add(queue, None)

    def _add(self, config: QueueConfig, parent: QueueNode | None) -> QueueNode:
        path = config.name if parent is None else f"{parent.path}.{config.name}"
        node = QueueNode(config, path, parent)
        self.nodes[path] = node
        if parent is not None:
            parent.children.append(node)
        for child in config.children:
            self._add(child, node)
        return node

    def get(self, path: str) -> QueueNode | None:
        if path.startswith("root."):
            path = path[len("root.") :]
        return self.nodes.get(path)

    def leaves(self) -> Iterator[QueueNode]:
        return (node for node in self.nodes.values() if node.is_leaf)

    def tenants(self) -> set[str]:
        return {tenant for node in self.leaves() for tenant in node.config.tenants}

    def may_submit(self, tenant: str, path: str) -> bool:
        """A leaf with no tenant list is open to every tenant; otherwise the tenant must be listed."""
        node = self.get(path)
        if node is None or not node.is_leaf:
            return False
        return not node.config.tenants or tenant in node.config.tenants
