"""Pydantic models shared by the API, the scheduler, the agents and the CLI."""

from federation.lifecycle.states import TERMINAL_STATES
from federation.models.job import (
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
from federation.models.resources import Resources, parse_resources

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
    "check_tenant_name",
    "parse_resources",
]
