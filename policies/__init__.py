"""fedq's scheduling policies: one session framework for the global and the local cycle.

Pure Python, no I/O, injected clock. The federation opens a session whose nodes are member
clusters (``NodeInfo`` with ``shapes``, ``placement: job``); a member agent opens one whose nodes
are its own. Both read the same conf vocabulary (volcano-scheduler.conf).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policies.clock import Clock, ManualClock, SystemClock
    from policies.framework.conf import Arguments, PluginConf, SchedulerConf, load_conf
    from policies.framework.decisions import Bind, Decisions, Eviction, Reason, Reservation
    from policies.framework.placement import NodeEvaluations
    from policies.framework.registry import register_action, register_plugin
    from policies.framework.session import Action, Plugin, Session, close_session, open_session
    from policies.ordering import PendingIndex
    from policies.profile import ReservationBook, TimeProfile
    from policies.shares import Claim, decay_rup, divide_tree, effective_priority, pie_spin, water_fill
    from policies.snapshot import (
        JobInfo,
        NodeInfo,
        NodeShape,
        QueueInfo,
        Snapshot,
        TaskInfo,
        TaskStatus,
        Usage,
    )

_HOMES = {
    "Action": "policies.framework.session",
    "Arguments": "policies.framework.conf",
    "Bind": "policies.framework.decisions",
    "Claim": "policies.shares",
    "Clock": "policies.clock",
    "Decisions": "policies.framework.decisions",
    "Eviction": "policies.framework.decisions",
    "JobInfo": "policies.snapshot",
    "ManualClock": "policies.clock",
    "NodeEvaluations": "policies.framework.placement",
    "NodeInfo": "policies.snapshot",
    "NodeShape": "policies.snapshot",
    "PendingIndex": "policies.ordering",
    "Plugin": "policies.framework.session",
    "PluginConf": "policies.framework.conf",
    "QueueInfo": "policies.snapshot",
    "Reason": "policies.framework.decisions",
    "Reservation": "policies.framework.decisions",
    "ReservationBook": "policies.profile",
    "SchedulerConf": "policies.framework.conf",
    "Session": "policies.framework.session",
    "Snapshot": "policies.snapshot",
    "SystemClock": "policies.clock",
    "TaskInfo": "policies.snapshot",
    "TaskStatus": "policies.snapshot",
    "TimeProfile": "policies.profile",
    "Usage": "policies.snapshot",
    "close_session": "policies.framework.session",
    "decay_rup": "policies.shares",
    "divide_tree": "policies.shares",
    "effective_priority": "policies.shares",
    "load_conf": "policies.framework.conf",
    "open_session": "policies.framework.session",
    "pie_spin": "policies.shares",
    "register_action": "policies.framework.registry",
    "register_plugin": "policies.framework.registry",
    "water_fill": "policies.shares",
}
"""Where each name lives: importing ``policies.format`` for the CLI must not load the session framework."""
__all__ = [
    "Action",
    "Arguments",
    "Bind",
    "Claim",
    "Clock",
    "Decisions",
    "Eviction",
    "JobInfo",
    "ManualClock",
    "NodeEvaluations",
    "NodeInfo",
    "NodeShape",
    "PendingIndex",
    "Plugin",
    "PluginConf",
    "QueueInfo",
    "Reason",
    "Reservation",
    "ReservationBook",
    "SchedulerConf",
    "Session",
    "Snapshot",
    "SystemClock",
    "TaskInfo",
    "TaskStatus",
    "TimeProfile",
    "Usage",
    "close_session",
    "decay_rup",
    "divide_tree",
    "effective_priority",
    "load_conf",
    "open_session",
    "pie_spin",
    "register_action",
    "register_plugin",
    "water_fill",
]


def __getattr__(name: str) -> object:
    """A name from its module on first use (PEP 562), then kept here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'policies' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
