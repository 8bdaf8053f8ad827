"""Job logs on the Kubernetes backend, through the stub's pod log endpoint: a pod printing 1,000 lines to
stdout and 3 to stderr reaches ``GET /v1/jobs/{id}/logs`` (in process, with a member agent on the
backend) as it prints, all of it in order once the pod ends; a pod printing past the launch's
``log_limit`` is read only up to it, the rest counted as dropped."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from federation.store import MemoryStore
from member_agent.agent import Agent
from member_agent.backends.base import TaskPhase
from member_agent.backends.k8s_pods import pod_name
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock
from tests.api.conftest import START, serving
from tests.api.support import dispatch, job_spec, join
from tests.k8s.conftest import MakeBackend, StubCluster
from tests.k8s.scenarios import gang, name_of, new_job_id
from tests.k8s.stub_api import StubApiServer
from tests.unit.test_agent_logs import lines, round_trip

WAIT = 10.0


async def test_a_pods_stdout_and_stderr_reach_the_federation_as_printed(
    stub: StubApiServer, make_backend: MakeBackend, tmp_path: Path
) -> None:
    stub.add_node("node-a")
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    async with serving(store, clock, sections={"logs": {"dir": str(tmp_path)}}) as api:
        credential = await join(api, "k1", backend="kubernetes")
        task = {"name": "main", "replicas": 1, "resources": {"cpu": "1"}, "command": ["sh", "-c", "true"]}
        job_id = (await api.http.post("/v1/jobs", json=job_spec(tasks=[task]), headers=api.auth("alice"))).json()["id"]
        await dispatch(api, job_id, "k1")
        backend = make_backend()
        agent = Agent(None, "k1", backend, LocalScheduler(clock), clock)
        await round_trip(api, agent, credential)  # learns the limits
        await round_trip(api, agent, credential)  # takes the job and creates its pod
        pod = pod_name(job_id, "main", 0, 1)
        assert backend.wait_until(lambda: any(t.job_id == job_id for t in backend.tasks()), WAIT)
        stub.start_pod(pod)
        assert backend.wait_until(lambda: any(t.phase is TaskPhase.RUNNING for t in backend.tasks()), WAIT)
        stub.write_log(pod, "stdout", [f"out {i}" for i in range(500)], at=START)
        stub.write_log(pod, "stderr", ["err 0"], at=START + 1)
        await round_trip(api, agent, credential)
        assert await lines(api, job_id) == [f"out {i}" for i in range(500)] + ["err 0"]  # while it runs

        stub.write_log(pod, "stdout", [f"out {i}" for i in range(500, 1000)], at=START + 2)
        stub.write_log(pod, "stderr", ["err 1", "err 2"], at=START + 3)
        stub.finish_pod(pod, 0)
        assert backend.wait_until(lambda: all(t.phase.terminal for t in backend.tasks()), WAIT)
        for _ in range(3):
            await round_trip(api, agent, credential)
        assert await lines(api, job_id, stream="stdout") == [f"out {i}" for i in range(1000)]
        assert await lines(api, job_id, stream="stderr") == ["err 0", "err 1", "err 2"]
        shown = (await api.http.get(f"/v1/jobs/{job_id}/logs", headers=api.auth("alice"))).json()
        assert shown["complete"] and len(shown["lines"]) == 1003
        assert stub.requests[-1].query.get("timestamps") == "true"
    await store.close()


def test_a_pod_is_read_up_to_its_log_limit(cluster: StubCluster, stub: StubApiServer) -> None:
    backend = cluster.make_backend()
    (task,) = gang(new_job_id(), ["node-a"])
    task = replace(task, log_limit=1000)
    backend.launch([task])
    cluster.run(name_of(task))
    assert backend.wait_until(lambda: any(t.phase is TaskPhase.RUNNING for t in backend.tasks()), WAIT)
    stub.write_log(name_of(task), "stdout", ["x" * 99] * 50)  # 5,000 bytes, 1,000 kept
    cluster.exit(name_of(task), 0)
    assert backend.wait_until(lambda: all(t.phase.terminal for t in backend.tasks()), WAIT)
    batches = backend.logs()
    stdout = [b for b in batches if b.stream == "stdout"]
    assert sum(len(b.lines) for b in stdout) == 10
    assert sum(b.dropped for b in stdout) > 0 and stdout[-1].ended
    assert all(b.ended for b in batches if b.stream == "stderr")
    assert backend.logs() == []  # the pod is let go once read to its end
