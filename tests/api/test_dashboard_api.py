"""What the dashboard (issue 25) asks of the API beyond the rest: whom a token names, the clusters' node
shapes and lostAfter, and an inner queue's listing covering its subtree (pages and watch alike)."""

from __future__ import annotations

from typing import Any

from federation.watch import Listing
from tests.api.support import NODE, Api, join, report


def spec(queue: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "j"},
        "spec": {"queue": queue, "tasks": [{"name": "main", "replicas": 1, "resources": {"cpu": 1}}]},
    }


async def submit(api: Api, who: str, queue: str) -> str:
    answer = await api.http.post("/v1/jobs?allowUnschedulable=true", json=spec(queue), headers=api.auth(who))
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


async def test_whoami_names_the_tokens_kind_and_owner(api: Api) -> None:
    alice = (await api.http.get("/v1/whoami", headers=api.auth("alice"))).json()
    assert (alice["role"], alice["name"]) == ("tenant", "alice") and len(alice["token_id"]) == 16
    assert (await api.http.get("/v1/whoami", headers=api.auth("admin"))).json()["role"] == "admin"
    assert (await api.http.get("/v1/whoami")).status_code == 401


async def test_the_cluster_list_carries_node_shapes_cordon_and_lost_after(api: Api) -> None:
    credential = await join(api, "east")
    await report(api, "east", credential, nodes=[{**NODE, "count": 3, "labels": {"gpu": "none"}}])
    await api.http.post("/v1/clusters/east/cordon", headers=api.auth("admin"))
    (east,) = (await api.http.get("/v1/clusters", headers=api.auth("alice"))).json()["items"]
    assert east["state"] == "Cordoned" and east["cordoned"] is True and east["lost_after"] == 15.0
    assert east["shapes"] == [
        {
            "name": "n1",
            "count": 3,
            "allocatable": {"cpu": 8.0, "memory": 32 * 2**30},
            "free": {"cpu": 8.0, "memory": 32 * 2**30},
            "labels": {"gpu": "none"},
            "unschedulable": False,
        }
    ]
    assert east["capacity"] == {"cpu": 24.0, "memory": 3 * 32 * 2**30}


async def test_an_inner_queue_lists_its_whole_subtree_page_by_page(api: Api) -> None:
    vision = [await submit(api, "alice", "research.vision") for _ in range(2)]
    nlp = await submit(api, "carol", "research.nlp")
    await submit(api, "alice", "scratch.default")
    seen: list[str] = []
    token = None
    while True:
        params = {"queue": "research", "limit": 1, **({"continue": token} if token else {})}
        page = (await api.http.get("/v1/jobs", params=params, headers=api.auth("admin"))).json()
        seen += [item["id"] for item in page["items"]]
        token = page["continue"]
        if token is None:
            break
    assert sorted(seen) == sorted([*vision, nlp])  # in key order: research.nlp's before research.vision's
    assert seen[0] == nlp
    mine = (await api.http.get("/v1/jobs", params={"queue": "research"}, headers=api.auth("alice"))).json()
    assert sorted(item["id"] for item in mine["items"]) == sorted(vision)  # a tenant's own, still
    leaf = (await api.http.get("/v1/jobs", params={"queue": "research.nlp"}, headers=api.auth("admin"))).json()
    assert [item["id"] for item in leaf["items"]] == [nlp]


def test_a_listing_watch_on_an_inner_queue_follows_its_subtree_only() -> None:
    listing = Listing("Pending", "research", None)
    assert listing.prefix.endswith("/Pending/research")
    view = {"id": "j", "tenant": "alice"}
    assert listing.matches({**view, "queue": "research.vision"}) and listing.matches({**view, "queue": "research"})
    assert not listing.matches({**view, "queue": "researchers.x"})  # shares the name's start only
    assert Listing(None, "research.vision", "bob").matches({**view, "queue": "research.vision"}) is False


async def test_the_page_is_served_without_a_token_and_root_redirects_to_it(api: Api) -> None:
    root = await api.http.get("/")
    assert root.status_code == 307 and root.headers["location"] == "/ui/"
    page = await api.http.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for asset in ("app.js", "style.css", "views/jobs.js"):
        served = await api.http.get(f"/ui/static/{asset}")
        assert served.status_code == 200 and served.text, asset
        assert served.headers["x-content-type-options"] == "nosniff"
    assert (await api.http.get("/ui/static/missing.js")).status_code == 404
    assert (await api.http.get("/v1/jobs")).status_code == 401  # the page holds no data until a token is typed
