"""fedq's scheduling policies: one session framework for the global and the local cycle.

Pure Python, no I/O, injected clock. The federation opens a session whose nodes are member
clusters (``NodeInfo`` with ``shapes``, ``placement: job``); a member agent opens one whose nodes
are its own. Both read the same conf vocabulary (volcano-scheduler.conf).
"""

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
