"""/v1/reports through the ASGI app: numbers, filters, formats, who may see what, metrics."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest
from prometheus_client import generate_latest

from federation.api.routes_reports import register_metrics
from federation.api.state import ApiMetrics
from federation.reports.window import fitting_window
from tests.reports.conftest import ReportsApi
from tests.reports.scenario import HOUR, NOW, T0

WINDOW = {"since": str(T0), "until": str(NOW)}


async def test_admin_sees_every_tenant_with_the_scenario_numbers(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get("/v1/reports/quota", params=WINDOW, headers=reports_api.auth("admin"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["capacity"] == {"cpu": 100.0}  # east 2 x 30 + west 2 x 20, from the cluster reports
    rows = {row["tenant"]: row for row in body["tenants"]}
    assert set(rows) == {"alice", "bob", "carol", "dave"}
    # Saved at T0 + 1 h, read at T0 + 2 h: the running jobs are carried to now.
    assert {t: r["resource_hours"].get("cpu", 0) for t, r in rows.items()} == {
        "alice": 100,
        "bob": 10,
        "carol": 20,
        "dave": 40,
    }
    assert sum(r["share_now"] for r in rows.values()) == pytest.approx(1.0)
    # Fair shares are entitlements (tests/reports/test_fair_share_series.py): the whole capacity, shared
    # by every tenant, carol's too though her job ended.
    assert sum(r["fair_share_units"] for r in rows.values()) == pytest.approx(100)
    assert all(r["fair_share"] > 0 for r in rows.values())
    assert (rows["alice"]["wait_p50"], rows["alice"]["wait_p95"]) == (300, 600)
    assert [q["queue"] for q in body["queues"]] == [
        "research",
        "research.nlp",
        "research.vision",
        "scratch",
        "scratch.default",
    ]


async def test_a_tenant_sees_only_its_own_row(reports_api: ReportsApi) -> None:
    own = await reports_api.http.get("/v1/reports/quota", params=WINDOW, headers=reports_api.auth("bob"))
    assert own.status_code == 200, own.text
    body = own.json()
    assert [row["tenant"] for row in body["tenants"]] == ["bob"]
    assert body["queues"] == []
    assert body["tenants"][0]["share_now"] == 0.125  # still a share of the whole federation: 10 of 80
    named = await reports_api.http.get("/v1/reports/quota", params={"tenant": "bob"}, headers=reports_api.auth("bob"))
    assert named.status_code == 200


async def test_a_tenant_asking_for_another_tenant_gets_403(reports_api: ReportsApi) -> None:
    for path in ("/v1/reports/quota", "/v1/reports/userprio"):
        response = await reports_api.http.get(path, params={"tenant": "alice"}, headers=reports_api.auth("bob"))
        assert response.status_code == 403
        assert response.json()["error"] == "tenant 'bob' cannot see the report of tenant 'alice'"
    # Asking for a tenant that does not exist is refused the same way: no probing for names.
    ghost = await reports_api.http.get("/v1/reports/quota", params={"tenant": "ghost"}, headers=reports_api.auth("bob"))
    assert ghost.status_code == 403


async def test_unknown_tenant_or_queue_gets_404_with_a_message(reports_api: ReportsApi) -> None:
    admin = reports_api.auth("admin")
    for path in ("/v1/reports/quota", "/v1/reports/userprio"):
        response = await reports_api.http.get(path, params={"tenant": "zed"}, headers=admin)
        assert response.status_code == 404
        assert response.json()["error"] == "unknown tenant 'zed'"
    response = await reports_api.http.get("/v1/reports/quota", params={"queue": "nope"}, headers=admin)
    assert (response.status_code, response.json()["error"]) == (404, "unknown queue 'nope'")


async def test_a_tenant_with_a_token_but_no_history_gets_an_empty_row(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get("/v1/reports/quota", headers=reports_api.auth("newbie"))
    assert response.status_code == 200
    (row,) = response.json()["tenants"]
    assert (row["tenant"], row["allocated"], row["running"]) == ("newbie", {}, 0)


async def test_cluster_credentials_and_no_token_are_refused(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get("/v1/reports/quota", headers=reports_api.auth("cluster"))
    assert response.status_code == 403
    assert "cluster credential cannot read reports" in response.json()["error"]
    assert (await reports_api.http.get("/v1/reports/quota")).status_code == 401


async def test_bad_window_is_a_422_naming_the_field(reports_api: ReportsApi) -> None:
    admin = reports_api.auth("admin")
    response = await reports_api.http.get("/v1/reports/quota", params={"since": "yesterday"}, headers=admin)
    assert response.status_code == 422
    assert response.json()["fields"][0]["field"] == "since"
    backwards = await reports_api.http.get("/v1/reports/quota", params={"since": "1h", "until": "2h"}, headers=admin)
    assert backwards.status_code == 422 and "ends before it starts" in backwards.json()["error"]
    too_many = await reports_api.http.get("/v1/reports/quota", params={"bins": 10**6}, headers=admin)
    assert too_many.status_code == 422


async def test_queue_filter_and_relative_window(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get(
        "/v1/reports/quota", params={"queue": "scratch", "since": "1h"}, headers=reports_api.auth("admin")
    )
    body = response.json()
    assert body["since"] == NOW - HOUR
    assert [(r["tenant"], r["resource_hours"]) for r in body["tenants"]] == [("dave", {"cpu": 20})]


async def test_the_default_window_is_the_smallest_that_holds_the_usage(reports_api: ReportsApi) -> None:
    # Issue 36: the window defaulted to 7d (the dashboard's to 1d) whatever the data. The scenario's usage
    # began at T0, two hours before now: 1h misses it, 6h holds it.
    admin = reports_api.auth("admin")
    body = (await reports_api.http.get("/v1/reports/quota", headers=admin)).json()
    print(f"default window: {(body['until'] - body['since']) / HOUR:g} h")
    assert (body["since"], body["until"]) == (NOW - 6 * HOUR, NOW), (body["since"], body["until"])
    auto = (await reports_api.http.get("/v1/reports/quota", params={"since": "auto"}, headers=admin)).json()
    assert auto["since"] == NOW - 6 * HOUR


def test_fitting_window_picks_the_smallest_standard_window() -> None:
    assert fitting_window(None, NOW) == "1h"  # nothing recorded yet
    assert fitting_window(NOW - 6 * 60, NOW) == "1h"  # the dashboard's six minutes of data
    assert fitting_window(NOW - 2 * HOUR, NOW) == "6h"
    assert fitting_window(NOW - 3 * 86_400, NOW) == "7d"
    assert fitting_window(NOW - 90 * 86_400, NOW) == "30d"  # older than every window: the largest


async def test_csv_has_a_header_and_one_row_per_tenant(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get(
        "/v1/reports/quota", params={**WINDOW, "format": "csv"}, headers=reports_api.auth("admin")
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.text)))
    assert [row["tenant"] for row in table] == ["alice", "bob", "carol", "dave"]
    alice = table[0]
    assert (alice["queues"], alice["resource_hours:cpu"], alice["guarantee:cpu"]) == (
        "research.vision",
        "100.0",
        "20.0",
    )
    assert alice["last_usage"].startswith("2023-11-14T02:00:00")


async def test_csv_by_cluster_has_one_row_per_tenant_and_cluster(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get(
        "/v1/reports/quota", params={**WINDOW, "format": "csv", "by": "cluster"}, headers=reports_api.auth("admin")
    )
    table = list(csv.DictReader(io.StringIO(response.text)))
    pairs = {(row["tenant"], row["cluster"]): row for row in table}
    assert set(pairs) == {("alice", "east"), ("bob", "west"), ("carol", "east"), ("dave", "west")}
    assert pairs[("carol", "east")]["resource_hours:cpu"] == "20.0"
    assert pairs[("carol", "east")]["completed"] == "1"


async def test_series_for_the_plot(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get(
        "/v1/reports/quota", params={**WINDOW, "bins": 2}, headers=reports_api.auth("alice")
    )
    series = response.json()["series"]
    assert series["tenants"] == {"alice": [50 * HOUR, 50 * HOUR]}
    assert series["total"] == [90 * HOUR, 80 * HOUR]


async def test_userprio_is_sorted_by_effective_priority(reports_api: ReportsApi) -> None:
    response = await reports_api.http.get("/v1/reports/userprio", headers=reports_api.auth("admin"))
    rows = response.json()["rows"]
    assert [row["tenant"] for row in rows] == sorted(
        (row["tenant"] for row in rows), key=lambda t: next(r["effective_priority"] for r in rows if r["tenant"] == t)
    )
    # With a 1-day half-life, the biggest user (alice, 50 cores for 2 h) has the worst priority.
    assert rows[-1]["tenant"] == "alice"
    own = await reports_api.http.get("/v1/reports/userprio", params={"format": "csv"}, headers=reports_api.auth("bob"))
    assert own.text.splitlines()[0].startswith("tenant,effective_priority,real_priority,priority_factor")
    assert [line.split(",")[0] for line in own.text.splitlines()[1:]] == ["bob"]


async def test_prometheus_metrics_per_tenant_and_queue(reports_api: ReportsApi) -> None:
    state = replace(reports_api.app.state.fedq, metrics=ApiMetrics())  # a registry of this test's own
    metrics = register_metrics(state)
    await metrics.refresh()
    text = generate_latest(state.metrics.usage).decode()  # the registry only admin and metrics tokens scrape
    assert 'fedq_tenant_allocated{resource="cpu",tenant="alice"} 50.0' in text
    assert 'fedq_tenant_share{tenant="dave"} 0.25' in text
    assert 'fedq_queue_pending{queue="research.vision"} 1.0' in text
    assert 'fedq_queue_allocated{queue="research",resource="cpu"} 60.0' in text
    # alice's usage since accounting began: 50 cores x 2 h = 360,000 core-seconds.
    assert 'fedq_tenant_usage_resource_seconds_total{resource="cpu",tenant="alice"} 360000.0' in text
    assert "fedq_tenant_rup" in text and "fedq_tenant_eup" in text
    json.dumps(text)  # plain text, nothing that needs the event loop at scrape time
