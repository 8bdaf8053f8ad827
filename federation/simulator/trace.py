"""An SWF trace as a scenario: the traced machine split into clusters, one gang of 1-cpu tasks per job.

A job of P processors becomes a gang of P tasks of one cpu each (``minAvailable`` = all), running for
the trace's runtime (field 4) with the requested time (field 9, or the runtime when unknown) as its
walltime. Tenants are SWF users (or one for all); queues are one leaf for all, or one per SWF group.
Specs are built without validation (``model_construct``): a trace has tens of thousands of jobs and
the reader has already checked every field.
"""

from __future__ import annotations

from typing import Literal

from federation.config import FederationConfig
from federation.models import JobSpecBody, QueueConfig, QueueTreeConfig, TaskSpec
from federation.simulator.scenario import Scenario, SimCluster, SimJob
from federation.simulator.swf import SwfJob, SwfTrace, split_nodes
from member_agent.backends.base import NodeView

QueueBy = Literal["one", "group"]
TenantBy = Literal["user", "one"]
ONE_QUEUE = "default"
ONE_TENANT = "everyone"


def scenario_from_swf(
    trace: SwfTrace,
    policy: FederationConfig,
    *,
    clusters: int = 1,
    nodes: int | None = None,
    queue_by: QueueBy = "one",
    tenant_by: TenantBy = "user",
) -> Scenario:
    """``clusters`` equal parts of the machine (the remainder of nodes goes to the first ones).

    ``tenant_by="one"`` makes every job one tenant's: with one queue that is plain first-come order,
    as in simulators without fair share.
    """
    machine = trace.machine(nodes)
    sims = []
    first = 0
    for number, count in enumerate(split_nodes(machine.nodes, clusters), start=1):
        views = [NodeView(f"node-{i}", {"cpu": float(machine.cores_per_node)}) for i in range(first, first + count)]
        sims.append(SimCluster(f"cluster-{number}", views))
        first += count
    queue_of = (lambda job: job.group_queue) if queue_by == "group" else (lambda job: ONE_QUEUE)
    jobs = [_job(job, queue_of(job), ONE_TENANT if tenant_by == "one" else job.tenant) for job in trace.jobs]
    leaves = sorted({job.spec.queue for job in jobs}) or [ONE_QUEUE]
    return Scenario(sims, QueueTreeConfig(queues=[QueueConfig(name=leaf) for leaf in leaves]), policy, jobs)


def _job(job: SwfJob, queue: str, tenant: str) -> SimJob:
    task = TaskSpec.model_construct(
        name="main", replicas=job.procs, resources={"cpu": 1.0}, command=[], env={}, runtime=job.runtime
    )
    spec = JobSpecBody.model_construct(
        queue=queue,
        priority=0,
        walltime=job.walltime,
        min_available=None,
        preemptible=False,
        cluster_selector={},
        tasks=[task],
        array=None,
        depends_on=[],  # given, as every default factory: pydantic finds a factory's default by its signature
    )
    return SimJob(str(job.id), tenant, job.submit, job.runtime, spec)
