"""``ray.address: ray://host:port`` (Ray Client) joins an existing cluster: the backend, in its child
process, sees the head's CPUs and runs a task there (issue 27)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from federation.launcher import wait_until
from member_agent.backends.base import TaskLaunch, TaskPhase, TaskReport
from member_agent.backends.isolated import BackendProcess
from policies.clock import SystemClock
from tests.e2e.ray_head import ENV, RayHead

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture
def head(monkeypatch: pytest.MonkeyPatch) -> Iterator[RayHead]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)  # for the backend's child, which inherits it
    started = RayHead(cpus=1)
    started.start()
    yield started
    started.close()


def test_a_ray_client_address_joins_the_cluster_and_runs_a_task(head: RayHead) -> None:
    backend = BackendProcess(
        "ray", "member_agent.backends.ray_backend:RayBackend", {"address": head.client_address}, SystemClock()
    )
    try:
        # Ray Client's server may still be starting: the backend retries as the agent's would.
        [node] = wait_until(backend.nodes, 90, "the backend to reach the head through Ray Client")
        assert node.allocatable["cpu"] == 1.0
        backend.launch([TaskLaunch("client", "main", 0, 1, node.name, {"cpu": 1.0}, ("sh", "-c", "echo via client"))])
        seen: list[TaskReport] = []
        deadline = time.monotonic() + 60
        while not any(status.phase.terminal for status in seen) and time.monotonic() < deadline:
            seen += backend.poll()
            time.sleep(0.1)  # the backend protocol is polled: there is no event to wait on
        assert [(s.phase, s.log_tail) for s in seen if s.phase.terminal] == [(TaskPhase.SUCCEEDED, "via client")]
    finally:
        backend.close()
