"""Pydantic models shared by the API, the scheduler, the agents and the CLI."""

from federation.models.job import (
    TERMINAL_STATES,
    ArraySpec,
    JobEvent,
    JobManifest,
    JobRecord,
    JobSpecBody,
    JobState,
    Metadata,
    TaskSpec,
)
from federation.models.queue import QueueConfig, QueueNode, QueueTree, QueueTreeConfig, check_tenant_name
from federation.models.resources import Resources, add_resources, fits, parse_resources

__all__ = [
    "TERMINAL_STATES",
    "ArraySpec",
    "JobEvent",
    "JobManifest",
    "JobRecord",
    "JobSpecBody",
    "JobState",
    "Metadata",
    "QueueConfig",
    "QueueNode",
    "QueueTree",
    "QueueTreeConfig",
    "Resources",
    "TaskSpec",
    "add_resources",
    "check_tenant_name",
    "fits",
    "parse_resources",
]
