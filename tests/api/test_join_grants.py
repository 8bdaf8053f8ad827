"""A join token bounds what its cluster may claim (issue 22): the labels it joins with and the capacity
its reports add up to. A join with other labels is a 403 that leaves the token unspent; a report over
the capacity is a 422 naming what it claims and what is allowed, and writes nothing."""

from __future__ import annotations

from typing import Any

from tests.api.support import NODE, Api


async def _token(api: Api, name: str, **grant: Any) -> str:
    response = await api.http.post(f"/v1/clusters/{name}/tokens", json=grant, headers=api.auth("admin"))
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


async def test_a_join_with_labels_its_token_does_not_allow_is_refused_and_the_token_kept(api: Api) -> None:
    token = await _token(api, "east", labels={"region": "eu"})
    before = await api.store.revision()
    claimed = {"token": token, "name": "east", "labels": {"region": "us", "gpu": "a100"}}
    refused = await api.http.post("/v1/clusters/join", json=claimed)
    assert refused.status_code == 403
    assert "gpu=a100, region=us are not allowed" in refused.json()["error"]
    assert "allowed: region=eu" in refused.json()["error"]
    assert await api.store.revision() == before
    joined = await api.http.post("/v1/clusters/join", json={**claimed, "labels": {"region": "eu"}})
    assert joined.status_code == 201, joined.text


async def test_a_report_over_its_token_capacity_is_refused_and_one_within_it_accepted(api: Api) -> None:
    token = await _token(api, "east", capacity={"cpu": 8, "memory": "32Gi"})
    joined = await api.http.post("/v1/clusters/join", json={"token": token, "name": "east"})
    auth = {"Authorization": f"Bearer {joined.json()['credential']}"}
    before = await api.store.revision()
    two = {**NODE, "count": 2}
    over = await api.http.post("/v1/clusters/east/report", json={"nodes": [two]}, headers=auth)
    assert over.status_code == 422
    assert "claims cpu=16, memory=64Gi, more than this cluster's join token allows" in over.json()["error"]
    gpus = {**NODE, "allocatable": {**NODE["allocatable"], "nvidia.com/gpu": 1}}
    unnamed = await api.http.post("/v1/clusters/east/report", json={"nodes": [gpus]}, headers=auth)
    assert unnamed.status_code == 422 and "nvidia.com/gpu=1" in unnamed.json()["error"]
    assert await api.store.revision() == before
    within = await api.http.post("/v1/clusters/east/report", json={"nodes": [NODE]}, headers=auth)
    assert within.status_code == 200, within.text


async def test_a_grant_that_cannot_be_read_is_a_422_and_issues_nothing(api: Api) -> None:
    before = await api.store.revision()
    bad = await api.http.post("/v1/clusters/east/tokens", json={"capacity": {"cpu": "lots"}}, headers=api.auth("admin"))
    assert bad.status_code == 422, bad.text
    tenant = await api.http.post("/v1/tenants/alice/tokens", json={"labels": {}}, headers=api.auth("admin"))
    assert tenant.status_code == 422
    assert await api.store.revision() == before
