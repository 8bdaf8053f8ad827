"""``GET /v1/admin/history``: a window of recorded jobs as a scenario (issue 37: the export, acceptance 2)."""

from __future__ import annotations

import yaml

from federation.jobs import JobRepository
from federation.lifecycle import Cancel
from federation.models import JobState
from federation.simulator.scenario import ScenarioFile
from federation.whatif.history import History
from tests import jobflow
from tests.api.support import Api, job_spec, join, report


async def _submit(api: Api, name: str, tenant: str = "alice", **spec: object) -> str:
    response = await api.http.post("/v1/jobs", json=job_spec(name, **spec), headers=api.auth(tenant))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_history_exports_the_window_as_a_scenario(api: Api) -> None:
    """Times are seconds from the window's start; runtimes from start to end; a cancel keeps its time;
    a running job its elapsed time, flagged; a job from before the window is left out, and counted when
    it was still unfinished at the window's start."""
    credential = await join(api, "east")
    await report(api, "east", credential)
    jobs = JobRepository(api.store)
    start = api.clock.now()
    before_done = await _submit(api, "old-done")
    await jobflow.advance(jobs, before_done, JobState.SUCCEEDED, start, cluster="east")
    before_running = await _submit(api, "old-running")
    await jobflow.advance(jobs, before_running, JobState.RUNNING, start, cluster="east")

    api.clock.advance(3600)  # the window opens here: since=2h at the end, 3600 s after these two
    ran = await _submit(api, "ran")
    api.clock.advance(10)
    await jobflow.dispatch(jobs, ran, "east", api.clock.now())
    api.clock.advance(5)
    await jobflow.report(jobs, ran, JobState.RUNNING, api.clock.now())  # starts 15 s after its submit
    api.clock.advance(120)
    await jobflow.report(jobs, ran, JobState.SUCCEEDED, api.clock.now())  # runs 120 s
    waits = await _submit(api, "waits", dependsOn=[{"job": ran}])
    cancelled = await _submit(api, "cancelled", tenant="carol", queue="research.nlp", priority=7)
    api.clock.advance(30)
    await jobflow.move(jobs, cancelled, Cancel("carol"), api.clock.now())
    running = await _submit(api, "running")
    await jobflow.advance(jobs, running, JobState.RUNNING, api.clock.now(), cluster="east")
    api.clock.advance(45)

    response = await api.http.get("/v1/admin/history", params={"since": "2h"}, headers=api.auth("admin"))
    assert response.status_code == 200, response.text
    document = response.json()
    history = History.model_validate(document["history"])
    scenario = ScenarioFile.model_validate(document).build()  # loads as any scenario does
    now = api.clock.now()
    assert history.since == now - 7200 and history.until == now
    print(
        f"exported {len(scenario.jobs)} jobs, left out {history.left_out}, notes "
        f"{ {k: v.note for k, v in history.jobs.items()} }"
    )
    # now = start + 3600 + 10 + 5 + 120 + 30 + 45 = start + 3810, so the window opens at start - 3390:
    # the two jobs of the hour before are in it, 3390 s in; "ran" is submitted 3390 + 3600 s in.
    by_id = {job.id: job for job in scenario.jobs}
    assert set(by_id) == {before_done, before_running, ran, waits, cancelled, running}
    offset = 3390.0
    assert by_id[ran].submit == offset + 3600 and by_id[ran].runtime == 120
    assert history.jobs[ran].note == "ran" and history.jobs[ran].start == offset + 3615
    assert history.jobs[ran].end == offset + 3735 and history.jobs[ran].cluster == "east"
    assert [(d.job, d.condition) for d in by_id[waits].depends_on] == [(ran, "afterok")]
    assert history.jobs[waits].note == "queued" and by_id[waits].runtime == 3600  # its walltime: 1h
    assert by_id[cancelled].tenant == "carol" and by_id[cancelled].spec.priority == 7
    assert [(a.at, a.kind, a.target) for a in scenario.actions] == [(offset + 3765, "cancel", cancelled)]
    assert history.jobs[cancelled].note == "cancelled"
    assert history.jobs[running].note == "running" and by_id[running].runtime == 45
    assert by_id[running].spec.tasks[0].resources == {"cpu": 2.0, "memory": 4 * 2**30}
    assert [len(c.nodes) for c in scenario.clusters] == [1] and scenario.clusters[0].name == "east"

    # A window opening after the two old jobs: the finished one is gone, the running one counted.
    narrow = await api.http.get("/v1/admin/history", params={"since": "1h"}, headers=api.auth("admin"))
    history = History.model_validate(narrow.json()["history"])
    assert before_done not in history.jobs and before_running not in history.jobs
    assert history.left_out == 1, history.left_out

    as_yaml = await api.http.get(
        "/v1/admin/history", params={"since": "1h", "format": "yaml"}, headers=api.auth("admin")
    )
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(as_yaml.text) == narrow.json()


async def test_history_refuses_a_window_whose_records_are_removed(api: Api) -> None:
    """keepFinished is 7 d by default: 30 d is refused with a 422 naming since and how far back it can go."""
    credential = await join(api, "east")
    await report(api, "east", credential)
    response = await api.http.get("/v1/admin/history", params={"since": "30d"}, headers=api.auth("admin"))
    print(f"since=30d -> {response.status_code} {response.json()}")
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["fields"][0]["field"] == "since", body
    message = body["error"]
    assert "30d ago" in message and "store.keepFinished" in message and "since=7d or less" in message, message

    ok = await api.http.get("/v1/admin/history", params={"since": "7d"}, headers=api.auth("admin"))
    assert ok.status_code == 200, ok.text
    for since in ("soon", "-1h", "now"):
        bad = await api.http.get("/v1/admin/history", params={"since": since}, headers=api.auth("admin"))
        assert bad.status_code == 422 and bad.json()["fields"][0]["field"] == "since", (since, bad.text)
    tenant = await api.http.get("/v1/admin/history", headers=api.auth("alice"))
    assert tenant.status_code == 403, tenant.text


async def test_history_without_a_reporting_cluster_is_a_409(api: Api) -> None:
    response = await api.http.get("/v1/admin/history", headers=api.auth("admin"))
    assert response.status_code == 409 and "cluster" in response.text, response.text
