"""A real member agent in a thread of the test process, reporting over https (directly or through a
``TcpProxy``; ``server`` may name several replicas, comma-separated), on a recording simulated backend
and the system clock; its join token bounds its capacity to its nodes; ``close`` stops it. It counts
the report steps that got no reply and the times it fenced itself."""

from __future__ import annotations

import threading
import time
from typing import Any

from federation.client import FedqClient
from federation.models.cluster import ReportReply
from member_agent.agent import Agent
from member_agent.backends.base import NodeView
from member_agent.local_scheduler import LocalScheduler
from policies.clock import SystemClock
from tests.chaos.runs import RecordingBackend

REPORT_INTERVAL = 0.2


class CountingAgent(Agent):
    """An agent that notes when (``time.monotonic``) a step got no reply (a failed report, or a step
    that raised) and when it fenced itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed: list[float] = []
        self.fenced_at: list[float] = []

    def step(self) -> ReportReply | None:
        try:
            reply = super().step()
        except Exception:
            self.failed.append(time.monotonic())
            raise
        if reply is None:
            self.failed.append(time.monotonic())
        return reply

    def fence(self, reason: str) -> None:
        self.fenced_at.append(time.monotonic())
        super().fence(reason)


class LiveAgent:
    def __init__(self, admin: FedqClient, name: str, server: str, ca: str, cpus: int = 4) -> None:
        token = admin.create_join_token(name, capacity={"cpu": cpus})  # it may claim just its nodes
        with FedqClient(server, ca=ca) as anonymous:
            joined = anonymous.request("POST", "/v1/clusters/join", body={"token": token, "name": name})
        clock = SystemClock()
        self.backend = RecordingBackend(name, [NodeView(f"{name}-n{i}", {"cpu": 1.0}) for i in range(cpus)], clock)
        self.client = FedqClient(server, joined["credential"], ca=ca)
        self.agent = CountingAgent(
            self.client, name, self.backend, LocalScheduler(clock), clock, report_interval=REPORT_INTERVAL
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.agent.run, args=(self._stop,), name=f"agent-{name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.client.close()
