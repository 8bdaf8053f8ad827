"""The member-agent protocol at the API: join tokens, reports, fencing by epoch, cordon."""

from __future__ import annotations

import json
from typing import Any

import pytest

from federation import keys
from federation.jobs import JobRepository
from federation.lifecycle import Cancel, ClusterLost
from federation.models import JobState
from tests.api.support import NODE, Api, dispatch, job_spec, join, report


async def test_join_token_works_once_and_only_for_its_cluster(api: Api) -> None:
    token = (await api.http.post("/v1/clusters/east/tokens", headers=api.auth("admin"))).json()["token"]
    wrong_name = await api.http.post("/v1/clusters/join", json={"token": token, "name": "west"})
    assert wrong_name.status_code == 401
    assert "made for cluster 'east'" in wrong_name.json()["error"]
    first = await api.http.post("/v1/clusters/join", json={"token": token, "name": "east"})
    assert first.status_code == 201, first.text
    before = await api.store.revision()
    again = await api.http.post("/v1/clusters/join", json={"token": token, "name": "east"})
    assert again.status_code == 401
    assert "already used" in again.json()["error"]
    made_up = await api.http.post("/v1/clusters/join", json={"token": "fedq_join_nope", "name": "east"})
    assert made_up.status_code == 401
    assert await api.store.revision() == before


async def test_a_cluster_credential_reports_only_as_its_own_cluster(api: Api) -> None:
    east = await join(api, "east")
    await join(api, "west")
    before = await api.store.revision()
    response = await api.http.post(
        "/v1/clusters/west/report", json={"nodes": [NODE]}, headers={"Authorization": f"Bearer {east}"}
    )
    assert response.status_code == 403
    assert "belongs to cluster 'east'" in response.json()["error"]
    tenant = await api.http.post("/v1/clusters/east/report", json={"nodes": [NODE]}, headers=api.auth("alice"))
    assert tenant.status_code == 403
    assert (
        await api.http.post("/v1/jobs", json=job_spec(), headers={"Authorization": f"Bearer {east}"})
    ).status_code == 403
    assert await api.store.revision() == before


async def test_report_delivers_assignment_and_advances_the_job(api: Api) -> None:
    credential = await join(api, "east")
    spec = job_spec(maxRetries=0)  # its failure ends it at once
    job_id = (await api.http.post("/v1/jobs", json=spec, headers=api.auth("alice"))).json()["id"]
    epoch = await dispatch(api, job_id, "east")
    reply = await report(api, "east", credential)
    assert [(a["job_id"], a["epoch"]) for a in reply["assignments"]] == [(job_id, epoch)]
    now = api.clock.now()
    update = {"job_id": job_id, "epoch": epoch, "time": now}
    reply = await report(api, "east", credential, updates=[{**update, "state": "Running"}])
    assert reply["assignments"] == [] and reply["refused"] == []
    reply = await report(
        api, "east", credential, updates=[{**update, "state": "Failed", "exit_code": 3, "log_tail": "boom"}]
    )
    job = (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()
    assert (job["state"], job["exit_code"], job["log_tail"]) == ("Failed", 3, "boom")
    assert [e["to"] for e in job["events"]] == ["Pending", "Dispatched", "Running", "Failed"]


async def test_a_stale_epoch_is_refused_and_answered_with_a_kill(api: Api) -> None:
    east = await join(api, "east")
    west = await join(api, "west")
    job_id = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).json()["id"]
    old_epoch = await dispatch(api, job_id, "east")
    jobs = JobRepository(api.store)
    stored = await jobs.get(job_id)
    await jobs.apply(stored, ClusterLost("east"), now=api.clock.now())
    new_epoch = await dispatch(api, job_id, "west")
    assert new_epoch == old_epoch + 1
    stale = {"job_id": job_id, "epoch": old_epoch, "time": api.clock.now(), "state": "Succeeded"}
    reply = await report(api, "east", east, updates=[stale], known=[[job_id, old_epoch]])
    assert [r["job_id"] for r in reply["refused"]] == [job_id]
    assert [(c["job_id"], c["epoch"]) for c in reply["cancellations"]] == [(job_id, old_epoch)]
    assert (await jobs.get(job_id)).record.state is JobState.DISPATCHED
    reply = await report(api, "west", west)
    assert [a["epoch"] for a in reply["assignments"]] == [new_epoch]


async def test_cancel_of_a_running_job_reaches_its_agent(api: Api) -> None:
    east = await join(api, "east")
    job_id = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).json()["id"]
    epoch = await dispatch(api, job_id, "east")
    await report(api, "east", east, updates=[{"job_id": job_id, "epoch": epoch, "time": 1.0, "state": "Running"}])
    cancelled = (await api.http.delete(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()
    assert (cancelled["state"], cancelled["cancel_requested"]) == ("Running", True)
    reply = await report(api, "east", east)
    assert [(c["job_id"], c["epoch"]) for c in reply["cancellations"]] == [(job_id, epoch)]
    await report(api, "east", east, updates=[{"job_id": job_id, "epoch": epoch, "time": 2.0, "state": "Cancelled"}])
    assert (await JobRepository(api.store).get(job_id)).record.state is JobState.CANCELLED
    assert (await report(api, "east", east))["cancellations"] == []


async def submit_dispatched(api: Api, cluster: str, count: int) -> list[tuple[str, int]]:
    jobs = []
    for _ in range(count):
        job_id = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))).json()["id"]
        jobs.append((job_id, await dispatch(api, job_id, cluster)))
    return jobs


async def test_a_burst_of_updates_is_read_and_written_in_a_few_txns(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    east = await join(api, "east")
    jobs = await submit_dispatched(api, "east", 20)
    txns = 0
    real_txn = api.store.txn

    async def counted(*args: Any) -> Any:
        nonlocal txns
        txns += 1
        return await real_txn(*args)

    monkeypatch.setattr(api.store, "txn", counted)
    started = api.clock.now()
    updates = [{"job_id": j, "epoch": e, "time": started, "state": "Running"} for j, e in jobs]
    reply = await report(api, "east", east, updates=updates)
    assert reply["refused"] == []
    # One txn reads the cluster, its cancels and assignments; one writes the report; then one reads the 20
    # records and one writes 20 transitions (their assignments go with them: not read again).
    assert txns == 4
    records = [(await JobRepository(api.store).get(j)).record for j, _ in jobs]
    assert {(r.state, r.start_time) for r in records} == {(JobState.RUNNING, started)}


async def test_a_job_that_moves_during_a_report_is_read_again_and_the_others_still_land(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    east = await join(api, "east")
    jobs = await submit_dispatched(api, "east", 4)
    moved = jobs[2][0]
    repository = JobRepository(api.store)
    real_txn = api.store.txn
    interfered = False

    async def interfering(compares: Any, success: Any, failure: Any = ()) -> Any:
        nonlocal interfered
        if len(compares) > 1 and not interfered:  # the report's batched write: a cancel request lands first
            interfered = True
            monkeypatch.setattr(api.store, "txn", real_txn)
            await repository.apply(await repository.get(moved), Cancel("alice"), now=api.clock.now())
            monkeypatch.setattr(api.store, "txn", interfering)
        return await real_txn(compares, success, failure)

    monkeypatch.setattr(api.store, "txn", interfering)
    updates = [{"job_id": j, "epoch": e, "time": 5.0, "state": "Running"} for j, e in jobs]
    reply = await report(api, "east", east, updates=updates)
    assert interfered and reply["refused"] == []
    records = {j: (await repository.get(j)).record for j, _ in jobs}
    assert {r.state for r in records.values()} == {JobState.RUNNING}
    assert [j for j, r in records.items() if r.cancel_requested] == [moved]  # the cancel request was kept


async def test_one_jobs_updates_in_one_report_apply_in_order(api: Api) -> None:
    east = await join(api, "east")
    [(job_id, epoch)] = await submit_dispatched(api, "east", 1)
    update = {"job_id": job_id, "epoch": epoch, "time": 5.0}
    updates = [{**update, "state": "Admitted"}, {**update, "state": "Running"}, {**update, "state": "Succeeded"}]
    reply = await report(api, "east", east, updates=updates)
    assert reply["refused"] == []
    job = (await api.http.get(f"/v1/jobs/{job_id}", headers=api.auth("alice"))).json()
    assert [e["to"] for e in job["events"]] == ["Pending", "Dispatched", "Admitted", "Running", "Succeeded"]


async def test_clusters_list_state_and_cordon(api: Api) -> None:
    east = await join(api, "east")
    await report(api, "east", east)
    clusters = (await api.http.get("/v1/clusters", headers=api.auth("admin"))).json()["items"]
    assert [(c["name"], c["state"], c["capacity"]["cpu"]) for c in clusters] == [("east", "Ready", 8.0)]
    assert (await api.http.post("/v1/clusters/east/cordon", headers=api.auth("alice"))).status_code == 403
    assert (await api.http.post("/v1/clusters/east/cordon", headers=api.auth("admin"))).json()["cordoned"] is True
    assert (await report(api, "east", east))["state"] == "Cordoned"
    api.clock.advance(3600)
    clusters = (await api.http.get("/v1/clusters", headers=api.auth("admin"))).json()["items"]
    assert clusters[0]["state"] == "Unreachable"


async def test_a_stored_report_that_cannot_be_read_counts_as_none_until_the_next(api: Api) -> None:
    east = await join(api, "east")
    old_format = {"time": api.clock.now(), "report": {"nodes": [NODE]}}  # what stores held before the compact form
    await api.store.put(keys.report("east"), json.dumps(old_format).encode())
    clusters = (await api.http.get("/v1/clusters", headers=api.auth("admin"))).json()["items"]
    assert [(c["name"], c["state"]) for c in clusters] == [("east", "Unreachable")]
    await report(api, "east", east)
    clusters = (await api.http.get("/v1/clusters", headers=api.auth("admin"))).json()["items"]
    assert [(c["name"], c["state"]) for c in clusters] == [("east", "Ready")]


async def test_bad_reports_are_refused_and_change_nothing(api: Api) -> None:
    east = await join(api, "east")
    headers = {"Authorization": f"Bearer {east}"}
    before = await api.store.revision()
    for body, field in [
        ({"nodes": [{"name": "n1", "allocatable": {"cpu": "x"}, "free": {}}]}, "nodes[0].allocatable"),
        ({"updates": [{"job_id": "a", "epoch": -1, "state": "Running", "time": 0}]}, "updates[0].epoch"),
        ({"updates": [{"job_id": "a", "epoch": 1, "state": "Dispatched", "time": 0}]}, "updates[0].state"),
        ({"surprise": 1}, "surprise"),
    ]:
        response = await api.http.post("/v1/clusters/east/report", json=body, headers=headers)
        assert response.status_code == 422, response.text
        assert any(field == f["field"] for f in response.json()["fields"]), response.text
    assert await api.store.revision() == before


async def test_a_report_too_large_to_store_is_refused_with_413(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    east = await join(api, "east")
    monkeypatch.setattr("federation.clusters.MAX_STORED_REPORT", 100)
    before = await api.store.revision()
    response = await api.http.post(
        "/v1/clusters/east/report", json={"nodes": [NODE]}, headers={"Authorization": f"Bearer {east}"}
    )
    assert response.status_code == 413 and "fit one etcd request" in response.json()["error"]
    assert await api.store.revision() == before


async def test_a_report_with_nothing_new_names_the_stored_one_and_moves_only_when_it_was_heard(api: Api) -> None:
    """What an agent does every second when none of its nodes, runs or honoured fields changed: it names the
    report the federation holds (``unchanged_since``, the ``revision`` of its last reply). The stored report
    is not written again; only when the cluster was heard is, so liveness follows the newer report."""
    east = await join(api, "east")
    whole = await report(api, "east", east)
    stored = await api.store.get(keys.report("east"))
    assert stored is not None and whole["revision"] == stored.mod_revision
    api.clock.advance(3600)  # past lostAfter: Unreachable unless the next report counts
    same = await report(api, "east", east, nodes=[], unchanged_since=whole["revision"])
    assert same["revision"] == whole["revision"]
    assert (await api.store.get(keys.report("east"))).mod_revision == stored.mod_revision  # type: ignore[union-attr]
    clusters = (await api.http.get("/v1/clusters", headers=api.auth("admin"))).json()["items"]
    assert [(c["name"], c["state"], c["last_report_age"], c["capacity"]["cpu"]) for c in clusters] == [
        ("east", "Ready", 0.0, 8.0)
    ]
    changed = await report(api, "east", east, nodes=[{**NODE, "free": {"cpu": 1}}])
    assert changed["revision"] > whole["revision"]
    stale = await report(api, "east", east, nodes=[], unchanged_since=whole["revision"])  # an older one named
    assert stale["revision"] is None  # the agent sends its next report whole
