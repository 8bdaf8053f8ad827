"""A real member agent in a thread of the test process, reporting over https (directly or through a
``TcpProxy``), on a recording simulated backend and the system clock; its join token bounds its
capacity to its nodes; ``close`` stops it."""

from __future__ import annotations

import threading

from federation.client import FedqClient
from member_agent.agent import Agent
from member_agent.backends.base import NodeView
from member_agent.local_scheduler import LocalScheduler
from policies.clock import SystemClock
from tests.chaos.runs import RecordingBackend

REPORT_INTERVAL = 0.2


class LiveAgent:
    def __init__(self, admin: FedqClient, name: str, server: str, ca: str, cpus: int = 4) -> None:
        token = admin.create_join_token(name, capacity={"cpu": cpus})  # it may claim just its nodes
        with FedqClient(server, ca=ca) as anonymous:
            joined = anonymous.request("POST", "/v1/clusters/join", body={"token": token, "name": name})
        clock = SystemClock()
        self.backend = RecordingBackend(name, [NodeView(f"{name}-n{i}", {"cpu": 1.0}) for i in range(cpus)], clock)
        self.client = FedqClient(server, joined["credential"], ca=ca)
        self.agent = Agent(
            self.client, name, self.backend, LocalScheduler(clock), clock, report_interval=REPORT_INTERVAL
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.agent.run, args=(self._stop,), name=f"agent-{name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.client.close()
