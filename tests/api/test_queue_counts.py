"""``GET /v1/queues`` counts each queue's unfinished jobs, which the store counts in the job index without
reading it; ``PUT /v1/queues`` refuses to take the leaf from a queue that still has some. On both stores."""

from __future__ import annotations

from typing import Any

from federation.jobs import JobRepository
from federation.models import JobState
from tests.api.conftest import QUEUES, ApiFactory
from tests.api.support import job_spec, populate
from tests.jobflow import advance, report


def _flat(nodes: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    out = {}
    for node in nodes:
        out[node["path"]] = (node["pending"], node["running"])
        out.update(_flat(node["children"]))
    return out


async def test_the_queue_view_counts_waiting_and_running_jobs_per_queue_and_up_the_tree(api_on: ApiFactory) -> None:
    async with api_on() as api:
        jobs = await populate(api)
        tree = (await api.http.get("/v1/queues", headers=api.auth("admin"))).json()["queues"]

    def count(state: str, *queues: str) -> int:
        return sum(1 for job in jobs.values() if job["state"] == state and job["queue"] in queues)

    leaves = ("research.vision", "research.nlp", "scratch.default")
    expected = {leaf: (count("Pending", leaf), count("Running", leaf)) for leaf in leaves}
    expected["research"] = (count("Pending", *leaves[:2]), count("Running", *leaves[:2]))
    expected["scratch"] = expected["scratch.default"]
    assert _flat(tree) == expected
    assert sum(pending + running for pending, running in expected.values()) < 2 * len(jobs)  # Succeeded left out
    assert all(expected[leaf][1] for leaf in leaves)


async def test_a_leaf_may_go_once_its_jobs_have_finished(api_on: ApiFactory) -> None:
    without_nlp = {"queues": [q for q in QUEUES["queues"] if q["name"] != "research"]}
    without_nlp["queues"].append({"name": "research", "children": [{"name": "vision", "tenants": ["alice", "bob"]}]})
    async with api_on() as api:
        body = job_spec("nlp-job", queue="research.nlp")
        job_id = (await api.http.post("/v1/jobs", json=body, headers=api.auth("carol"))).json()["id"]
        repository = JobRepository(api.store)
        await advance(repository, job_id, JobState.RUNNING, api.clock.now())

        refused = await api.http.put("/v1/queues", json=without_nlp, headers=api.auth("admin"))
        await report(repository, job_id, JobState.SUCCEEDED, api.clock.now())
        applied = await api.http.put("/v1/queues", json=without_nlp, headers=api.auth("admin"))

    assert refused.status_code == 409 and "research.nlp" in refused.json()["error"]
    assert applied.status_code == 200, applied.text
    assert "research.nlp" not in applied.json()["applied"]
