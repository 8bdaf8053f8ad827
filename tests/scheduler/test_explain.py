"""``GET /v1/jobs/{id}/explain`` tells the true reason a job waits (issue 5 acceptance 3), on real
etcd with the real scheduler service and simulated clusters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from federation.api.app import create_app
from federation.auth import Role
from federation.models import JobState
from tests.scheduler.conftest import HarnessFactory
from tests.scheduler.harness import Harness

pytestmark = pytest.mark.etcd

ADMIN = "fedq_admin_explain"
CPU4 = [{"count": 1, "namePrefix": "n", "resources": {"cpu": 4}}]
NO_RESERVATIONS = {"reservation": {"depth": 0}}


@pytest.fixture
async def explain_of(make_harness: HarnessFactory) -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    async def make(harness: Harness) -> Any:
        app = create_app(harness.store, admin_token=ADMIN, config=harness.config, clock=harness.clock)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://fedq")
        clients.append(http)

        async def explain(job_id: str, token: str = ADMIN) -> dict[str, Any]:
            response = await http.get(f"/v1/jobs/{job_id}/explain", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200, response.text
            return dict(response.json())

        return explain

    yield make
    for http in clients:
        await http.aclose()


def codes(why: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in why["reasons"]]


async def test_waiting_on_fair_share(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness(NO_RESERVATIONS, {"queues": [{"name": "a"}, {"name": "b"}]})
    await h.join("c1", CPU4)
    a_jobs = [await h.submit("x", queue="a", runtime=1000) for _ in range(4)]
    [await h.submit("y", queue="b", runtime=1000) for _ in range(4)]
    await h.tick()
    explain = await explain_of(h)
    waiting = [j for j in a_jobs if (await h.job(j)).state is JobState.PENDING]
    why = await explain(waiting[0])
    assert codes(why)[0] == "fair-share"
    assert why["summary"].startswith("held by fair share: its queue or tenant holds its slice")
    assert "queue a holds its fair share" in why["summary"]
    assert why["position"]["in_queue"] == 1 and why["position"]["queue_length"] == len(waiting)


async def test_place_in_line_is_the_schedulers_fair_share_order(make_harness: HarnessFactory, explain_of: Any) -> None:
    """x has used the cluster, y has not: y's job comes first in the cycle's line although x's was
    submitted before it, and explain says so (by submit time x's would be first). A job the cycle has
    not taken up yet gets its place in its queue by priority and submit time."""
    h = await make_harness(NO_RESERVATIONS, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    [await h.submit("x", cpu=1, runtime=10_000) for _ in range(2)]
    await h.tick()
    await h.tick(600)
    early = await h.submit("x", cpu=3)
    late = await h.submit("y", cpu=3)
    await h.tick(1)
    explain = await explain_of(h)
    first, second = await explain(late), await explain(early)
    assert codes(first) == codes(second) == ["insufficient"]
    assert (first["position"]["overall"], second["position"]["overall"]) == (1, 2)
    assert (first["position"]["in_queue"], second["position"]["in_queue"]) == (1, 2)
    assert first["position"]["queued"] == first["position"]["queue_length"] == 2
    assert first["position"]["basis"] == "the order the last cycle took waiting jobs up in"
    newest = await h.submit("x", cpu=3, priority=5)
    unseen = await explain(newest)
    assert unseen["position"]["overall"] is None and unseen["position"]["in_queue"] == 1
    assert unseen["position"]["queued"] == 3 and unseen["position"]["reached"] == 2


async def test_blocked_by_cap(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness(NO_RESERVATIONS, {"queues": [{"name": "a", "cap": {"cpu": 2}}, {"name": "b"}]})
    await h.join("c1", CPU4)
    jobs = [await h.submit("x", queue="a", runtime=1000) for _ in range(3)]
    await h.tick()
    why = await (await explain_of(h))(jobs[2])
    assert why["state"] == "Pending"
    assert codes(why) == ["cap"]
    assert why["summary"] == "held by its queue's cap — queue a would exceed its cap (2 units)"


async def test_holding_and_waiting_behind_a_reservation(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness({"reservation": {"after": "0s", "depth": 1}}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    first = await h.submit("x", cpu=3, runtime=100)
    await h.tick()
    big = await h.submit("x", cpu=4, runtime=100)
    long = await h.submit("x", cpu=1, runtime=500)
    await h.tick(1)
    explain = await explain_of(h)
    holder = await explain(big)
    assert holder["state"] == "Reserved"
    assert holder["reservation"]["start"] == pytest.approx((await h.job(first)).start_time + 100)
    # The harness clock starts at 1,000,000 s (1970-01-12T13:46:40Z); the first job ends 100 s later.
    assert holder["summary"] == "holds a reservation on c1 from 1970-01-12T13:48:20+00:00 (in 1m39s)"
    assert holder["reservation"]["start"] == 1_000_100  # machine fields stay epoch seconds
    assert ("reserved", "reserved on c1 from 1970-01-12T13:48:20+00:00") in [
        (r["code"], r["message"]) for r in holder["reasons"]
    ]
    record = await h.job(big)
    assert record.reason == record.events[-1].reason == "reserved on c1 from 1970-01-12T13:48:20+00:00"
    assert holder["projected_start"]["basis"] == "its reservation"
    behind = await explain(long)
    assert "reservation" in codes(behind)
    assert f"job {big} reserved" in behind["summary"]


async def test_a_tenant_sees_another_tenants_reservation_without_its_job_id(
    make_harness: HarnessFactory, explain_of: Any
) -> None:
    """Tenants cannot read each other's jobs, so explain does not name them either; an admin sees all."""
    h = await make_harness({"reservation": {"after": "0s", "depth": 1}}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    first = await h.submit("y", cpu=3, runtime=100)
    await h.tick()
    big = await h.submit("x", cpu=4, runtime=100)  # x has used nothing yet: first in line, and reserves
    long = await h.submit("y", cpu=1, runtime=500)  # fits now, but would delay x's job
    await h.tick(1)
    assert (await h.job(big)).state is JobState.RESERVED and (await h.job(long)).state is JobState.PENDING
    explain = await explain_of(h)
    y_token = await h.tokens.issue(Role.TENANT, "y")

    as_y = await explain(long, y_token)
    assert "reservation" in codes(as_y)
    start = (await h.job(first)).start_time + 100
    assert as_y["other_reservations"] == [
        {"job": None, "clusters": {"c1": 1}, "start": pytest.approx(start), "end": pytest.approx(start + 100)}
    ]
    assert as_y["summary"].endswith("(another tenant's job reserved from 1970-01-12T13:48:20+00:00 (in 1m39s))")
    assert big not in str(as_y)

    as_admin = await explain(long)
    assert [(r["job"], r["tenant"]) for r in as_admin["other_reservations"]] == [(big, "x")]
    assert f"job {big} reserved" in as_admin["summary"]


async def test_no_cluster_matches_labels_and_too_big(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4, {"region": "eu"})
    mars = await h.submit("x", selector={"region": "mars"})
    huge = await h.submit("x", cpu=16)
    await h.tick()
    explain = await explain_of(h)
    assert (await explain(mars))["summary"] == "Unschedulable: no cluster has the labels region=mars"
    why = await explain(huge)
    assert why["state"] == "Unschedulable"
    assert "task main needs cpu=16: more than any node of any matching cluster" in why["summary"]
    assert why["projected_start"] is None


async def test_reasons_show_resources_as_quantities(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    hungry = await h.submit("x", cpu=0.5, memory="256Mi")  # c1's nodes have no memory to give
    await h.tick()
    why = await (await explain_of(h))(hungry)
    assert why["summary"] == (
        "Unschedulable: task main needs cpu=500m, memory=256Mi: more than any node of any matching cluster"
    )


async def test_a_job_before_any_cluster_joined(make_harness: HarnessFactory, explain_of: Any) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    job = await h.submit("x")
    await h.tick()
    why = await (await explain_of(h))(job)
    assert (why["state"], why["summary"]) == ("Pending", "no cluster has joined")


async def test_a_gang_that_matches_labels_but_has_no_room_now_waits_on_capacity(
    make_harness: HarnessFactory, explain_of: Any
) -> None:
    """Issue 21: the two clusters without its labels outnumbered the one that has them but is busy, and
    explain said "no cluster matches its clusterSelector" and counted the clusters as nodes."""
    h = await make_harness(NO_RESERVATIONS, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4, {"region": "eu"})
    await h.join("c2", CPU4, {"region": "us"})
    await h.join("c3", CPU4, {"region": "us"})
    await h.submit("x", cpu=2, runtime=1000, selector={"region": "eu"})
    await h.tick()
    gang = await h.submit("x", cpu=2, replicas=2, selector={"region": "eu"})
    await h.tick(1)
    why = await (await explain_of(h))(gang)
    assert why["state"] == "Pending"
    assert codes(why) == ["insufficient"]
    assert why["summary"] == (
        "held by capacity: no matching cluster has room now — 0/3 clusters can take the whole job (cpu=4) now: "
        "1 short of room for all of it, 2 not matching its clusterSelector"
    )


async def test_a_reservation_has_one_shape(make_harness: HarnessFactory, explain_of: Any) -> None:
    """Issue 32: the dashboard read a reservation's ``clusters`` as a list and failed on a Reserved job.
    It is an object, cluster -> the job's tasks held there, with ``start`` and ``end`` in epoch seconds
    (docs/ui.md), in the JSON and in the OpenAPI document alike; a job that is not queued has none."""
    h = await make_harness({"reservation": {"after": "0s", "depth": 1}}, {"queues": [{"name": "a"}]})
    await h.join("c1", CPU4)
    first = await h.submit("x", cpu=3, runtime=100)
    await h.tick()
    gang = await h.submit("x", cpu=2, replicas=2, runtime=100)
    behind = await h.submit("x", cpu=1, runtime=500)
    await h.tick(1)
    assert (await h.job(gang)).state is JobState.RESERVED
    explain = await explain_of(h)
    start = (await h.job(first)).start_time + 100
    why = await explain(gang)
    assert why["reservation"] == {"clusters": {"c1": 2}, "start": start, "end": start + 100, "tenant": "x"}
    assert why["summary"].startswith("holds a reservation on c1 from ")
    other = (await explain(behind))["other_reservations"]
    assert other == [{"job": gang, "clusters": {"c1": 2}, "start": start, "end": start + 100, "tenant": "x"}]
    assert (await explain(behind))["reservation"] is None
    assert not (await h.job(first)).state.queued and "reservation" not in await explain(first)

    app = create_app(h.store, admin_token=ADMIN, config=h.config, clock=h.clock)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://fedq") as http:
        schemas = (await http.get("/openapi.json")).json()["components"]["schemas"]
    reservation = schemas["Reservation"]
    assert reservation["properties"]["clusters"] == {
        "additionalProperties": {"type": "integer"},
        "type": "object",
        "title": "Clusters",
    }
    assert set(reservation["required"]) == {"clusters", "start", "end"}
    assert {"$ref": "#/components/schemas/Reservation"} in schemas["Explanation"]["properties"]["reservation"]["anyOf"]


async def test_a_job_making_room_by_preemption_says_so(make_harness: HarnessFactory, explain_of: Any) -> None:
    """Two one-cpu jobs of priority 0 fill c1; a priority-10 job of 2 cpus comes after the 30 s grace:
    with preemption on it stops both, and explain says so until it starts."""
    h = await make_harness({"preemption": {"enabled": True, "grace": "30s"}}, {"queues": [{"name": "a"}]})
    await h.join("c1", [{"count": 2, "namePrefix": "n", "resources": {"cpu": 1}}])
    low = [await h.submit("x", runtime=1000, preemptible=True) for _ in range(2)]
    await h.tick()
    high = await h.submit("y", cpu=1, replicas=2, runtime=100, priority=10)
    await h.tick(60)
    explain = await explain_of(h)
    why = await explain(high)
    assert "preempting" in codes(why)
    assert why["summary"] == "will preempt 2 jobs on c1: it starts once they have stopped"
    assert why["projected_start"] is None  # as soon as they have stopped: no end to wait for
    for job in low:
        record = await h.job(job)
        assert record.evicting or record.state is JobState.PENDING


async def test_waiting_for_a_cluster_to_report(make_harness: HarnessFactory, explain_of: Any) -> None:
    """No member cluster yet: the job waits for room, said once for its queue (the cycle tries no job)."""
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    job = await h.submit("x", queue="a", runtime=10)
    await h.tick()
    why = await (await explain_of(h))(job)
    print(f"explained: {why['summary']!r}, {why['reasons']}")
    assert (await h.job(job)).state is JobState.PENDING
    assert why["summary"] == "no cluster has joined"
    assert [(r["code"], r["message"]) for r in why["reasons"]] == [("insufficient", "there is no cluster to run it on")]
