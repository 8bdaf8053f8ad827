"""The audit log: one JSON line per admin action (and per cancel), with who, what, when and the result."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import START, ApiFactory
from tests.api.support import ADMIN, Api, bearer, job_spec, join


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_one_line_per_admin_action(api_on: ApiFactory, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    async with api_on(sections={"audit": {"log": str(log)}}) as api:
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        admin = api.auth("admin")
        made = (await api.http.post("/v1/tenants/dave/tokens", json={"ttl": "1d"}, headers=admin)).json()
        credential = await join(api, "east")  # a join token issued, then spent
        await api.http.post("/v1/clusters/east/cordon", headers=admin)
        await api.http.post("/v1/clusters/east/uncordon", headers=admin)
        submitted = await api.http.post("/v1/jobs?tenant=alice&allowUnschedulable=true", json=job_spec(), headers=admin)
        job_id = submitted.json()["id"]
        own = (await api.http.post("/v1/jobs", json=job_spec(), headers=api.auth("bob"))).json()["id"]  # not audited
        await api.http.delete(f"/v1/jobs/{own}", headers=api.auth("bob"))
        await api.http.delete(f"/v1/jobs/{job_id}", headers=admin)
        await api.http.put("/v1/queues", json={"queues": [{"name": "x"}]}, headers=api.auth("alice"))  # refused
        await api.http.delete(f"/v1/tokens/{made['id']}", headers=admin)
        await api.http.get("/v1/tokens", headers=admin)  # reads are not audited
        await api.http.post("/v1/clusters/east/report", json={"nodes": []}, headers=bearer(credential))
    written = lines(log)
    bootstrap = "admin/bootstrap"
    assert [(line["who"], line["action"], line["result"]) for line in written] == [
        (bootstrap, "queues.apply", "ok"),  # the fixture's
        (bootstrap, "token.issue", "ok"),
        (bootstrap, "token.issue", "ok"),
        ("join/east", "cluster.join", "ok"),
        (bootstrap, "cluster.cordon", "ok"),
        (bootstrap, "cluster.uncordon", "ok"),
        (bootstrap, "job.submit", "ok"),
        ("tenant/bob", "job.cancel", "ok"),
        (bootstrap, "job.cancel", "ok"),
        ("tenant/alice", "queues.apply", "refused"),
        (bootstrap, "token.revoke", "ok"),
    ]
    assert {line["time"] for line in written} == {START}
    assert {line["at"] for line in written} == {"2023-11-14T22:13:20+00:00"}
    assert written[1]["target"] == {"name": "dave", "kind": "tenant", "id": made["id"], "expires_at": START + 86400}
    assert written[6]["target"] == {"tenant": "alice", "allowUnschedulable": "true"}
    assert written[8]["target"] == {"job_id": job_id}
    assert (written[9]["status"], written[9]["error"]) == (403, "this needs an admin token; you are tenant 'alice'")
    assert written[10]["target"] == {"token_id": made["id"]}
    assert {line["token"] for line in written if line["who"] == bootstrap} == {written[0]["token"]}
    assert ADMIN not in log.read_text() and made["token"] not in log.read_text()


async def test_by_default_the_audit_log_goes_to_stderr(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    await api.http.post("/v1/clusters/nowhere/cordon", headers=api.auth("admin"))
    (line,) = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    assert (line["action"], line["target"], line["result"], line["status"]) == (
        "cluster.cordon",
        {"name": "nowhere"},
        "refused",
        404,
    )
