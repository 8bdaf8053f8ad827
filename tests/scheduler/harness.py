"""The real scheduler service on a real store, with simulated member clusters and a manual clock.

Each simulated cluster is a real ``Agent`` (tracker, local session, simulated backend) whose report
goes straight to the federation's ``ClusterService`` instead of over HTTP (its wire body validated, as the
API does: ``arrived``). ``tick`` moves time and
runs one round: agents report, the scheduler catches up and cycles, agents act on the replies.
"""

from __future__ import annotations

from typing import Any

from federation.auth import Role, TokenStore
from federation.clusters import ClusterService
from federation.config import FederationConfig
from federation.jobs import JobRepository, expand
from federation.models import JobManifest, JobRecord, QueueTreeConfig
from federation.models.agent_report import PlainClusterReport, to_wire
from federation.models.cluster import ClusterReport, JoinRequest
from federation.scheduler.service import SchedulerService
from federation.store import Store
from member_agent.agent import Agent
from member_agent.backends.simulated import SimulatedBackend
from member_agent.local_scheduler import LocalScheduler
from policies.clock import Clock, ManualClock


def arrived(report: PlainClusterReport) -> ClusterReport:
    """An agent's report as the federation's API takes it in: its JSON body validated."""
    return ClusterReport.model_validate(to_wire(report))


class Harness:
    def __init__(
        self, store: Store, config: dict[str, Any], queues: dict[str, Any], start: float = 1_000_000.0
    ) -> None:
        self.store = store
        self.clock = ManualClock(start)
        self.config = FederationConfig.model_validate(config)
        self.queues = QueueTreeConfig.model_validate(queues)
        self.jobs = JobRepository(store)
        self.tokens = TokenStore(store, self.clock)
        self.clusters = ClusterService(store, self.jobs, self.tokens, self.clock, liveness=self.config.cluster)
        self.service = SchedulerService(store, self.config, self.clock, save_every=0)
        self.agents: dict[str, Agent] = {}
        self.silenced: set[str] = set()

    async def start(self) -> None:
        from federation import keys

        await self.store.put(keys.QUEUES, self.queues.model_dump_json(by_alias=True).encode())

    async def join(
        self, name: str, nodes: list[dict[str, Any]], labels: dict[str, str] | None = None, clock: Clock | None = None
    ) -> Agent:
        """``clock``: the agent's own (the federation's by default), e.g. one that runs behind."""
        token = await self.tokens.issue(Role.JOIN, name)
        await self.clusters.join(JoinRequest(token=token, name=name, labels=labels or {}))
        clock = clock or self.clock
        backend = SimulatedBackend.from_config({"nodes": nodes}, clock)
        agent = Agent(None, name, backend, LocalScheduler(clock), clock)
        self.agents[name] = agent
        await self._report(agent)
        return agent

    async def submit(
        self,
        tenant: str,
        *,
        name: str = "job",
        queue: str = "a",
        cpu: float = 1,
        memory: str | None = None,
        replicas: int = 1,
        runtime: float = 100,
        walltime: float | None = None,
        priority: int = 0,
        selector: dict[str, str] | None = None,
        preemptible: bool = False,
        placement: str = "pack",
    ) -> str:
        resources: dict[str, float | str] = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
        manifest = JobManifest.model_validate(
            {
                "metadata": {"name": name},
                "spec": {
                    "queue": queue,
                    "priority": priority,
                    "walltime": walltime or runtime,
                    "preemptible": preemptible,
                    "clusterSelector": selector or {},
                    "placement": placement,
                    "tasks": [{"replicas": replicas, "resources": resources, "runtime": runtime}],
                },
            }
        )
        records = expand(manifest, tenant, self.clock.now())
        await self.jobs.create(records)
        return records[0].id

    async def _report(self, agent: Agent) -> None:
        agent.observe()
        if agent.cluster in self.silenced:
            agent.keep_lease()  # cut off: its reports never arrive; past its lease it stops its runs
            return
        report = agent.build_report()
        reply = await self.clusters.report(agent.cluster, arrived(report))
        agent.handle_reply(report, reply)
        agent.schedule()

    async def tick(self, seconds: float = 0.0) -> None:
        """Advance the clock, then: agents report, the scheduler catches up and cycles, agents act."""
        self.clock.advance(seconds)
        for agent in self.agents.values():
            await self._report(agent)
        await self.service.follow()
        assert await self.service.lead()  # acquires once, then renews the lease
        await self.service.sync()
        await self.service.cycle()
        for _ in range(2):  # the assignment, then the agent's Running update
            for agent in self.agents.values():
                await self._report(agent)
        await self.service.sync()

    async def job(self, job_id: str) -> JobRecord:
        return (await self.jobs.get(job_id)).record

    async def close(self) -> None:
        await self.service.close()
