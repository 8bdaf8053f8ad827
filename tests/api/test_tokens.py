"""Tokens that end: revoked, expired (by the injected clock), a re-joined cluster's old credential, a rotated
admin token; their listing; ttls that must be finite and bounded; /metrics behind a token."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from federation.api.app import create_app
from federation.config import FederationConfig
from federation.store import MemoryStore
from policies.clock import ManualClock
from tests.api.conftest import START, ApiFactory
from tests.api.support import ADMIN, NODE, Api, bearer, job_spec, join

DAY = 86400.0


async def tenant_token(api: Api, tenant: str, ttl: str | None = None) -> dict[str, Any]:
    body = None if ttl is None else {"ttl": ttl}
    response = await api.http.post(f"/v1/tenants/{tenant}/tokens", json=body, headers=api.auth("admin"))
    assert response.status_code == 201, response.text
    return dict(response.json())


async def listed(api: Api, **params: str) -> dict[str, dict[str, Any]]:
    response = await api.http.get("/v1/tokens", params=params, headers=api.auth("admin"))
    assert response.status_code == 200, response.text
    return {item["id"]: item for item in response.json()["items"]}


async def refused(api: Api, token: str, path: str = "/v1/jobs") -> str:
    """The 401 a request with ``token`` gets (and that it wrote nothing); returns its message."""
    before = await api.store.revision()
    response = await api.http.get(path, headers=bearer(token))
    assert response.status_code == 401, response.text
    assert await api.store.revision() == before
    return str(response.json()["error"])


async def test_a_revoked_token_is_refused_at_once_and_says_what_to_do(api_on: ApiFactory) -> None:
    async with api_on() as api:
        made = await tenant_token(api, "alice")
        assert (await api.http.get("/v1/jobs", headers=bearer(made["token"]))).status_code == 200
        response = await api.http.delete(f"/v1/tokens/{made['id']}", headers=api.auth("admin"))
        assert response.status_code == 200, response.text
        revoked = response.json()
        assert (revoked["state"], revoked["revoked_because"]) == ("revoked", "revoked by admin bootstrap")
        message = await refused(api, made["token"])
        assert f"token {made['id']} was revoked at 2023-11-14T22:13:20+00:00" in message
        assert "ask an admin for a new one (`fedq token create --tenant alice`)" in message
        assert (await api.http.get("/v1/jobs", headers=api.auth("alice"))).status_code == 200  # others still work
        again = await api.http.delete(f"/v1/tokens/{made['id']}", headers=api.auth("admin"))
        assert again.json()["revoked_at"] == revoked["revoked_at"]


async def test_a_token_expires_by_the_injected_clock(api: Api) -> None:
    ops = {"kind": "admin", "name": "ops", "ttl": "60d"}  # outlives the bootstrap admin token (30d)
    api.tokens["admin"] = (await api.http.post("/v1/tokens", json=ops, headers=api.auth("admin"))).json()["token"]
    default = await tenant_token(api, "alice")
    short = await tenant_token(api, "bob", ttl="1h")
    assert (default["expires_at"], short["expires_at"]) == (START + 30 * DAY, START + 3600)
    api.clock.advance(3599)
    assert (await api.http.get("/v1/jobs", headers=bearer(short["token"]))).status_code == 200
    api.clock.advance(1)
    message = await refused(api, short["token"])
    assert f"token {short['id']} expired at 2023-11-14T23:13:20+00:00" in message
    assert "fedq token create --tenant bob" in message
    assert (await api.http.get("/v1/jobs", headers=bearer(default["token"]))).status_code == 200
    api.clock.set(START + 30 * DAY)
    assert "expired at" in await refused(api, default["token"])
    states = {item["id"]: item["state"] for item in (await listed(api, kind="tenant")).values()}
    assert (states[default["id"]], states[short["id"]]) == ("expired", "expired")


async def test_the_default_ttls_come_from_the_config(api_on: ApiFactory) -> None:
    async with api_on(sections={"auth": {"tokenTtl": "2d", "joinTokenTtl": "10m"}}) as api:
        assert (await tenant_token(api, "alice"))["expires_at"] == START + 2 * DAY
        join_token = await api.http.post("/v1/clusters/east/tokens", headers=api.auth("admin"))
        assert join_token.json()["expires_at"] == START + 600
        api.clock.advance(601)
        late = await api.http.post("/v1/clusters/join", json={"token": join_token.json()["token"], "name": "east"})
        assert late.status_code == 401
        assert "expired" in late.json()["error"]


async def test_a_rejoined_clusters_old_credential_stops_at_once(api_on: ApiFactory) -> None:
    async with api_on() as api:
        old = await join(api, "east")
        report = {"nodes": [NODE]}
        assert (await api.http.post("/v1/clusters/east/report", json=report, headers=bearer(old))).status_code == 200
        new = await join(api, "east")
        before = await api.store.revision()
        response = await api.http.post("/v1/clusters/east/report", json=report, headers=bearer(old))
        assert response.status_code == 401
        assert "(cluster east joined again)" in response.json()["error"]
        assert "fedq token create --cluster east" in response.json()["error"]
        assert await api.store.revision() == before
        assert (await api.http.post("/v1/clusters/east/report", json=report, headers=bearer(new))).status_code == 200
        credentials = sorted((t["state"], t["revoked_because"]) for t in (await listed(api, kind="cluster")).values())
        assert credentials == [("active", None), ("revoked", "cluster east joined again")]


async def test_the_listing_names_every_token_and_shows_none(api: Api) -> None:
    tenant = await tenant_token(api, "carol", ttl="2h")
    join_token = (await api.http.post("/v1/clusters/east/tokens", headers=api.auth("admin"))).json()
    response = await api.http.get("/v1/tokens", headers=api.auth("admin"))
    assert response.status_code == 200
    for secret in (tenant["token"], join_token["token"], ADMIN, *api.tokens.values()):
        assert secret not in response.text
    tokens = await listed(api)
    assert tokens[tenant["id"]] == {
        "id": tenant["id"],
        "kind": "tenant",
        "name": "carol",
        "created_at": START,
        "expires_at": START + 7200,
        "revoked_at": None,
        "revoked_because": None,
        "state": "active",
    }
    assert tokens[join_token["id"]]["kind"] == "join"
    bootstrap = [t for t in tokens.values() if t["kind"] == "admin"]
    assert [(t["name"], t["expires_at"]) for t in bootstrap] == [("bootstrap", START + 30 * DAY)]
    carols = await listed(api, kind="tenant", name="carol")
    assert tenant["id"] in carols and {t["name"] for t in carols.values()} == {"carol"}
    assert len(carols) == 2  # the fixture's and this one


async def test_ended_tokens_are_listed_30_days_then_pruned_but_never_the_bootstrap(api: Api) -> None:
    ops = {"kind": "admin", "name": "ops", "ttl": "90d"}
    api.tokens["admin"] = (await api.http.post("/v1/tokens", json=ops, headers=api.auth("admin"))).json()["token"]
    short = await tenant_token(api, "alice", ttl="1h")
    revoked = await tenant_token(api, "bob")
    await api.http.delete(f"/v1/tokens/{revoked['id']}", headers=api.auth("admin"))
    api.clock.set(START + 3600 + 30 * DAY - 1)
    await tenant_token(api, "carol")  # an issue prunes what ended more than 30 days ago
    assert {short["id"], revoked["id"]} - set(await listed(api)) == {revoked["id"]}
    api.clock.advance(2)
    await tenant_token(api, "carol")
    assert not {short["id"], revoked["id"]} & set(await listed(api))
    api.clock.set(START + 61 * DAY)
    await tenant_token(api, "carol")
    assert [t["state"] for t in (await listed(api, name="bootstrap")).values()] == ["expired"]
    assert "expired at" in await refused(api, ADMIN)


async def test_the_admin_token_rotates_and_a_revoked_bootstrap_stays_revoked() -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)

    async def client(bootstrap: str) -> httpx.AsyncClient:
        app = create_app(store, admin_token=bootstrap, clock=clock)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://fedq")

    async with await client(ADMIN) as http:
        made = await http.post("/v1/tokens", json={"kind": "admin", "name": "ops"}, headers=bearer(ADMIN))
        assert made.status_code == 201, made.text
        ops = made.json()["token"]
        tokens = (await http.get("/v1/tokens", params={"kind": "admin"}, headers=bearer(ops))).json()["items"]
        assert {t["name"] for t in tokens} == {"bootstrap", "ops"}
        bootstrap_id = next(t["id"] for t in tokens if t["name"] == "bootstrap")
        assert (await http.delete(f"/v1/tokens/{bootstrap_id}", headers=bearer(ops))).status_code == 200
        response = await http.get("/v1/tokens", headers=bearer(ADMIN))
        assert response.status_code == 401
        assert "restart the server with a new FEDQ_ADMIN_TOKEN" in response.json()["error"]
    async with await client(ADMIN) as http:  # a restart with the same value does not bring it back
        assert (await http.get("/v1/tokens", headers=bearer(ADMIN))).status_code == 401
        assert (await http.get("/v1/tokens", headers=bearer(ops))).status_code == 200
    async with await client("fedq_admin_a-new-value") as http:  # a new value is a new bootstrap
        assert (await http.get("/v1/tokens", headers=bearer("fedq_admin_a-new-value"))).status_code == 200
    await store.close()


@pytest.mark.parametrize(
    ("ttl", "message"),
    [
        ('"1e400"', "duration must be finite"),
        ('"inf"', "duration must be finite"),
        ("1e400", "duration must be finite"),
        ('"nan"', "duration must be finite"),
        ('"366d"', "must be at most 365d (auth.maxTokenTtl)"),
        ("0", "must be a positive duration"),
        ('"-5s"', "invalid duration"),
        ("true", "duration must be seconds or a string"),
        ('"soon"', "invalid duration 'soon'"),
    ],
)
async def test_a_ttl_must_be_finite_and_bounded(api: Api, ttl: str, message: str) -> None:
    before = await api.store.revision()
    for path in ("/v1/tenants/alice/tokens", "/v1/clusters/east/tokens"):
        response = await api.http.post(path, content=f'{{"ttl": {ttl}}}', headers=api.auth("admin"))
        assert response.status_code == 422, response.text
        assert message in response.json()["error"]
        assert response.json()["fields"][0] == {"field": "ttl", "message": response.json()["fields"][0]["message"]}
        assert message in response.json()["fields"][0]["message"]
    body = json.loads(f'{{"kind": "metrics", "name": "prom", "ttl": {ttl}}}')
    response = await api.http.post("/v1/tokens", content=json.dumps(body), headers=api.auth("admin"))
    assert (response.status_code, response.json()["fields"][0]["field"]) == (422, "ttl")
    assert await api.store.revision() == before


@pytest.mark.parametrize(
    ("section", "texts"),
    [
        ({"tokenTtl": "inf"}, ("auth.tokenTtl", "duration must be finite")),
        ({"joinTokenTtl": "1e400"}, ("auth.joinTokenTtl", "duration must be finite")),
        ({"maxTokenTtl": 0}, ("auth.maxTokenTtl", "must be a positive duration")),
        ({"tokenTtl": "400d"}, ("tokenTtl (400d) must not be longer than maxTokenTtl (365d)",)),
    ],
)
def test_the_configured_ttls_are_finite_and_bounded(section: dict[str, object], texts: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as caught:
        FederationConfig.model_validate({"auth": section})
    for text in texts:
        assert text in str(caught.value)


@pytest.mark.parametrize(
    ("who", "method", "path", "body", "status", "text"),
    [
        ("alice", "GET", "/v1/tokens", None, 403, "needs an admin token"),
        ("alice", "DELETE", "/v1/tokens/0123456789abcdef", None, 403, "needs an admin token"),
        ("alice", "POST", "/v1/tokens", {"kind": "admin", "name": "me"}, 403, "needs an admin token"),
        ("admin", "DELETE", "/v1/tokens/0123456789abcdef", None, 404, "no token with id 0123456789abcdef"),
        ("admin", "DELETE", "/v1/tokens/abc", None, 422, "a token id is 16 hex digits"),
        ("admin", "POST", "/v1/tokens", {"kind": "tenant", "name": "x"}, 422, "kind"),
        ("admin", "POST", "/v1/tokens", {"kind": "admin", "name": "Not OK"}, 422, "invalid admin token name"),
        ("admin", "POST", "/v1/tokens", {"kind": "admin", "name": "a", "tll": "1d"}, 422, "did you mean 'ttl'"),
    ],
)
async def test_token_routes_refuse_bad_requests_and_write_nothing(
    api: Api, who: str, method: str, path: str, body: Any, status: int, text: str
) -> None:
    before = await api.store.revision()
    response = await api.http.request(method, path, json=body, headers=api.auth(who))
    assert response.status_code == status, response.text
    error = response.json()
    assert text in error["error"] or any(text in f["field"] or text in f["message"] for f in error["fields"]), error
    assert await api.store.revision() == before


async def test_a_join_token_is_no_bearer_token(api: Api) -> None:
    token = (await api.http.post("/v1/clusters/east/tokens", headers=api.auth("admin"))).json()["token"]
    assert "a join token only joins its cluster" in await refused(api, token)


async def test_metrics_need_a_token_and_usage_series_an_admin_or_metrics_token(api: Api) -> None:
    await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("alice"))
    assert (await api.http.get("/metrics")).status_code == 401
    scraper = (
        await api.http.post("/v1/tokens", json={"kind": "metrics", "name": "prom"}, headers=api.auth("admin"))
    ).json()["token"]
    tenant = (await api.http.get("/metrics", headers=api.auth("alice"))).text
    assert 'fedq_jobs_submitted_total{queue="research.vision"} 1.0' in tenant
    assert "fedq_tenant_" not in tenant and "fedq_queue_" not in tenant
    for token in (ADMIN, scraper):
        text = (await api.http.get("/metrics", headers=bearer(token))).text
        assert 'fedq_tenant_pending{tenant="alice"} 1.0' in text
        assert 'fedq_jobs_submitted_total{queue="research.vision"} 1.0' in text
    for path in ("/v1/jobs", "/v1/reports/userprio", "/v1/tokens"):
        assert (await api.http.get(path, headers=bearer(scraper))).status_code == 403
