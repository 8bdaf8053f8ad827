"""A job no joined cluster could ever run is refused at submit with a 422 naming the field and saying
what to do, and nothing is written; ``allowUnschedulable=true`` accepts it (issue 21, acceptance 3)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.api.admission import JOINED_FRESH_FOR
from tests.api.conftest import ApiFactory, serving
from tests.api.support import Api, job_spec, join, report

pytestmark = pytest.mark.etcd
FPGA_NODE = {
    "name": "f1",
    "allocatable": {"cpu": 8, "memory": "32Gi", "example.com/fpga": 2},
    "free": {"cpu": 8, "memory": "32Gi", "example.com/fpga": 2},
}


def task(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "worker", "replicas": 1, "resources": {"cpu": "1"}, "runtime": "10s"}
    body.update(changes)
    return body


async def joined(api: Api, name: str = "east", **join_args: Any) -> None:
    """A cluster that has joined and reported its one 8-cpu, 32Gi node."""
    await report(api, name, await join(api, name, **join_args))


async def refused(api: Api, body: Any, path: str = "/v1/jobs") -> dict[str, Any]:
    """Submit ``body`` as alice; assert a 422 that changed nothing and return its one field."""
    before = await api.store.revision()
    response = await api.http.post(path, json=body, headers=api.auth("alice"))
    assert response.status_code == 422, response.text
    assert await api.store.revision() == before, "a refused submit wrote to the store"
    [field] = response.json()["fields"]
    assert field["field"] in response.json()["error"]
    return dict(field)


async def accepted(api: Api, body: Any, path: str = "/v1/jobs") -> None:
    response = await api.http.post(path, json=body, headers=api.auth("alice"))
    assert response.status_code == 201, response.text


async def test_an_unknown_resource_is_refused_with_the_closest_known_name(api_on: ApiFactory) -> None:
    async with api_on() as api:
        field = await refused(api, job_spec(tasks=[task(resources={"cpu": "1", "memroy": "1Gi"})]))
        assert field["field"] == "spec.tasks[0].resources.memroy"
        assert "unknown resource 'memroy'" in field["message"]
        assert "did you mean 'memory'?" in field["message"]


async def test_a_resource_a_joined_cluster_reports_is_known(api_on: ApiFactory) -> None:
    async with api_on() as api:
        fpga = job_spec(tasks=[task(resources={"cpu": "1", "example.com/fpga": 1})])
        field = await refused(api, fpga)
        assert field["field"] == "spec.tasks[0].resources.example.com/fpga"
        credential = await join(api, "east")
        await report(api, "east", credential, nodes=[FPGA_NODE])
        await accepted(api, fpga)
        await accepted(api, job_spec(tasks=[task(resources={"cpu": "1", "gpu": 0})]))  # gpu: nvidia.com/gpu
        disk = await refused(api, job_spec(tasks=[task(resources={"ephemeral-storage": "1Gi"})]))
        assert disk["field"] == "spec.tasks[0].resources"  # a standard name, but no node has it
        assert "more than any node" in disk["message"]


async def test_an_unknown_resource_in_a_bulk_submit_names_its_job_and_writes_none(api_on: ApiFactory) -> None:
    async with api_on() as api:
        bad = job_spec(tasks=[task(resources={"cpus": "1"})])
        field = await refused(api, {"jobs": [job_spec(), bad]})
        assert field["field"] == "jobs[1].spec.tasks[0].resources.cpus"
        assert "did you mean 'cpu'?" in field["message"]


async def test_a_task_bigger_than_every_node_is_refused_once_a_cluster_has_joined(api_on: ApiFactory) -> None:
    async with api_on() as api:
        big = job_spec(tasks=[task(), task(name="huge", resources={"cpu": "64"})], array={"count": 3})
        await accepted(api, big)  # no cluster has joined: nothing is certain yet
        await joined(api)
        field = await refused(api, big)
        assert field["field"] == "spec.tasks[1].resources"
        assert "task huge needs" in field["message"] and "more than any node" in field["message"]
        assert "allowUnschedulable=true" in field["message"]
        await accepted(api, big, "/v1/jobs?allowUnschedulable=true")


async def test_a_gang_bigger_than_every_cluster_is_refused(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await joined(api)
        field = await refused(api, job_spec(tasks=[task(replicas=5, resources={"cpu": "2"})]))
        assert field["field"] == "spec.tasks"
        assert "the gang of 5 tasks (worker: 5 x cpu=2" in field["message"]
        assert "a job runs whole on one cluster" in field["message"]
        elastic = job_spec(minAvailable=5, tasks=[task(replicas=6, resources={"cpu": "2"})])
        assert (await refused(api, elastic))["field"] == "spec.minAvailable"
        await accepted(api, job_spec(minAvailable=4, tasks=[task(replicas=6, resources={"cpu": "2"})]))


async def test_a_gang_that_fits_a_clusters_total_but_not_its_nodes_is_refused(api_on: ApiFactory) -> None:
    """Four 8-cpu nodes and one 16-cpu node: 48 cpus, yet four 10-cpu tasks each need a node of 10
    or more and there is one (Volcano's predicates: a task fits one node). A 422 naming the task's
    shape and the largest node; a gang of one such task fits."""
    async with api_on() as api:
        nodes = [
            {"name": "small", "count": 4, "allocatable": {"cpu": 8}, "free": {"cpu": 8}},
            {"name": "big", "allocatable": {"cpu": 16}, "free": {"cpu": 16}},
        ]
        await report(api, "east", await join(api, "east"), nodes=nodes)
        gang = job_spec(tasks=[task(replicas=4, resources={"cpu": "10"})])
        field = await refused(api, gang)
        assert field["field"] == "spec.tasks"
        message = field["message"]
        assert "worker: 4 x cpu=10" in message and "largest node cpu=16" in message, message
        await accepted(api, job_spec(tasks=[task(replicas=1, resources={"cpu": "10"})]))
        await accepted(api, job_spec(tasks=[task(replicas=5, resources={"cpu": "8"})]))  # one a node


async def test_a_selector_no_joined_cluster_matches_is_refused(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await joined(api)
        field = await refused(api, job_spec(clusterSelector={"region": "mars"}, tasks=[task()]))
        assert field["field"] == "spec.clusterSelector"
        assert "no cluster has the labels region=mars; the joined clusters have east: region=eu" in field["message"]
        await accepted(api, job_spec(clusterSelector={"region": "eu"}, tasks=[task()]))
        await accepted(
            api, job_spec(clusterSelector={"region": "mars"}, tasks=[task()]), "/v1/jobs?allowUnschedulable=true"
        )


async def test_a_matching_cluster_that_has_not_reported_yet_could_hold_anything(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await joined(api)
        await join(api, "big", labels={"size": "big"})
        await accepted(api, job_spec(clusterSelector={"size": "big"}, tasks=[task(resources={"cpu": "64"})]))


async def test_a_task_without_a_command_is_refused_when_every_cluster_needs_one(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await joined(api, "ray-a", backend="ray")
        field = await refused(api, job_spec(tasks=[task(command=["true"]), task(name="bare")]))
        assert field["field"] == "spec.tasks[1].command"
        assert "ray backend" in field["message"] and "add a command" in field["message"]
        await accepted(api, job_spec(tasks=[task(command=["true"])]))
        await joined(api, "sim", labels={"region": "us"})
        await accepted(api, job_spec(tasks=[task()]))  # the simulated cluster runs it without one
        field = await refused(api, job_spec(clusterSelector={"region": "eu"}, tasks=[task()]))
        assert field["field"] == "spec.tasks[0].command"  # only the Ray cluster matches


async def test_a_spread_gang_wider_than_every_cluster_is_refused(api_on: ApiFactory) -> None:
    """east has one 8-cpu node: two 1-cpu tasks fit it packed, not one per node."""
    async with api_on() as api:
        await joined(api)
        await accepted(api, job_spec(tasks=[task(replicas=2)]))
        field = await refused(api, job_spec(placement="spread", tasks=[task(replicas=2)]))
        assert field["field"] == "spec.placement"
        assert "the gang needs 2 nodes of its own (placement: spread)" in field["message"]
        assert "use pack" in field["message"]
        await accepted(api, job_spec(placement="spread", tasks=[task(replicas=1)]))
        bad = await refused(api, job_spec(placement="scatter", tasks=[task()]))
        assert bad["field"] == "spec.placement" and "'pack' or 'spread'" in bad["message"]


async def test_submits_read_the_clusters_once_a_second_and_again_before_a_refusal(api_on: ApiFactory) -> None:
    """Accepting needs a read at most ``JOINED_FRESH_FOR`` old and after this replica's last change to a
    cluster; a refusal is checked against a fresh one, so a cluster that grew through another replica since
    the last read takes the job at once."""
    async with api_on() as api, serving(api.store, api.clock) as other:
        await joined(api)  # one 8-cpu node
        clusters = api.app.state.fedq.clusters
        reads = 0
        shapes = clusters.shapes

        async def counted() -> Any:
            nonlocal reads
            reads += 1
            return await shapes()

        clusters.shapes = counted
        for _ in range(5):
            await accepted(api, job_spec(tasks=[task()]))
        assert reads == 1, "five submits in one second read the clusters more than once"
        api.clock.advance(JOINED_FRESH_FOR)
        await accepted(api, job_spec(tasks=[task()]))
        assert reads == 2
        big = {"name": "b1", "allocatable": {"cpu": 64}, "free": {"cpu": 64}}
        await report(api, "big", await join(api, "big"), nodes=[big])
        await accepted(api, job_spec(tasks=[task(resources={"cpu": "32"})]))
        assert reads == 3  # read again after the join through this replica
        await report(other, "huge", await join(other, "huge"), nodes=[{**big, "allocatable": {"cpu": 96}}])
        await accepted(api, job_spec(tasks=[task(resources={"cpu": "80"})]))  # the kept read would refuse it
        assert reads == 4
