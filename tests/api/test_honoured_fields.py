"""A job field some backends cannot honour (a task image, a runtimeEnv) is refused at submit when no
cluster it may run on honours it, naming the field; a cluster honours what its agent reports."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiFactory
from tests.api.support import Api, job_spec, join, report
from tests.api.test_admission import accepted, refused

pytestmark = pytest.mark.etcd
KUBERNETES = ["image", "imagePullPolicy", "workingDir"]


def task(**changes: Any) -> dict[str, Any]:
    return {"name": "worker", "resources": {"cpu": "1"}, "command": ["python", "train.py"], **changes}


async def joined(api: Api, name: str, backend: str, honours: list[str], region: str) -> None:
    await report(api, name, await join(api, name, backend=backend, labels={"region": region}), honours=honours)


async def test_an_image_is_refused_where_only_ray_clusters_run(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await joined(api, "ray-a", "ray", ["runtimeEnv"], "eu")
        field = await refused(api, job_spec(tasks=[task(), task(name="second", image="python:3.12-slim")]))
        assert field["field"] == "spec.tasks[1].image"
        assert "no cluster this job may run on honours image" in field["message"]
        assert "ray-a (ray): runtimeEnv" in field["message"]
        field = await refused(api, job_spec(tasks=[task(workingDir="/work")]))
        assert field["field"] == "spec.tasks[0].workingDir"
        await accepted(api, job_spec(tasks=[task()], runtimeEnv={"env_vars": {"A": "1"}}))

        await joined(api, "k8s", "kubernetes", KUBERNETES, "us")
        await accepted(api, job_spec(tasks=[task(image="python:3.12-slim", imagePullPolicy="Always")]))
        field = await refused(api, job_spec(clusterSelector={"region": "eu"}, tasks=[task(image="python:3.12")]))
        assert field["field"] == "spec.tasks[0].image"  # only the Ray cluster matches
        field = await refused(api, job_spec(clusterSelector={"region": "us"}, tasks=[task()], runtimeEnv={}))
        assert field["field"] == "spec.runtimeEnv"


async def test_a_cluster_that_reports_nothing_honours_nothing(api_on: ApiFactory) -> None:
    """An agent from before capabilities were reported: its cluster gets no job that uses one."""
    async with api_on() as api:
        await report(api, "old", await join(api, "old", backend="kubernetes"))
        field = await refused(api, job_spec(tasks=[task(image="busybox:1.36")]))
        assert field["field"] == "spec.tasks[0].image" and "old (kubernetes): none" in field["message"]


async def test_a_cluster_not_reported_yet_could_honour_anything(api_on: ApiFactory) -> None:
    async with api_on() as api:
        await join(api, "new", backend="ray")
        await accepted(api, job_spec(tasks=[task(image="busybox:1.36")]))


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"image": "Busybox:1.36"}, "spec.tasks[0].image", "invalid image reference"),
        ({"image": "busybox:"}, "spec.tasks[0].image", "[registry/]name[:tag][@sha256:digest]"),
        ({"image": "busybox@sha256:abc"}, "spec.tasks[0].image", "invalid image reference"),
        ({"imagePullPolicy": "Sometimes"}, "spec.tasks[0].imagePullPolicy", "Always"),
        ({"workingDir": "work"}, "spec.tasks[0].workingDir", "an absolute path"),
    ],
)
async def test_bad_image_fields_are_refused_by_name(
    api_on: ApiFactory, changes: dict[str, str], field: str, words: str
) -> None:
    async with api_on() as api:
        refusal = await refused(api, job_spec(tasks=[task(**changes)]))
        assert refusal["field"] == field and words in refusal["message"]


async def test_a_join_may_not_claim_what_a_backend_honours(api_on: ApiFactory) -> None:
    async with api_on() as api:
        token = (await api.http.post("/v1/clusters/east/tokens", headers=api.auth("admin"))).json()["token"]
        body = {"token": token, "name": "east", "labels": {"honours.fedq.io/image": "true"}}
        response = await api.http.post("/v1/clusters/join", json=body)
        assert response.status_code == 422, response.text
        assert "fedq's own" in response.text
