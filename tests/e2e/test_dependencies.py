"""Dependencies end to end (issue 23, acceptance 2): a server on real etcd with a simulated agent runs
a three-job afterok chain in order, an afternotok job only after a failure, cancels the dependant of
a failed job with the reason, holds an array's dependant until every element succeeded, refuses a
cycle at submit, and explains a waiting job by the jobs it waits for and their states.

A simulated task fails when its runtime is past its walltime (killed for walltime: Failed, not
retried)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from federation.client import FedqError
from federation.launcher import wait_until
from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import ADMIN_TOKEN, REPO, cli, cli_json

pytestmark = [pytest.mark.etcd, pytest.mark.slow]
ENDED = {"Succeeded", "Failed", "Cancelled"}


def _after(spec: dict[str, Any], *dependencies: dict[str, str]) -> dict[str, Any]:
    spec["spec"]["dependsOn"] = list(dependencies)
    return spec


def _failing(name: str) -> dict[str, Any]:
    return job(name, runtime="3s", walltime="1s")


def test_dependencies_against_a_server_on_etcd(etcd_server: EtcdServer, tmp_path: Path) -> None:
    fed = Federation(etcd_server.connection, tmp_path, {**FAST, "dispatchPerCycle": 100})
    try:
        fed.join("east", "simulated")
        # A chain named within one bulk submit, listed last link first: the names decide, not the order.
        chain = fed.admin.submit_many(
            [
                _after(job("third", runtime="1s"), {"name": "second"}),
                _after(job("second", runtime="1s"), {"name": "first"}),
                job("first", runtime="1s"),
            ],
            tenant="alice",
        )
        third, second, first = chain
        slow = fed.submit(job("slow", runtime="8s"))
        waiting = fed.submit(_after(job("waiting", runtime="1s"), {"job": slow}))
        failing = fed.submit(_failing("failing"))
        on_failure = fed.submit(_after(job("on-failure", runtime="1s"), {"job": failing, "condition": "afternotok"}))
        on_success = fed.submit(_after(job("on-success", runtime="1s"), {"job": failing}))
        array = job("sweep", runtime="1s")
        array["spec"]["array"] = {"count": 3}
        sweep = fed.admin.submit(array, tenant="alice")
        gather = fed.submit(_after(job("gather", runtime="1s"), {"array": sweep["id"]}))

        # Explain names the job it waits for and its state while that runs.
        def explained() -> dict[str, Any] | None:
            why = fed.admin.request("GET", f"/v1/jobs/{waiting}/explain")
            return why if "(Running)" in why["summary"] else None

        why = wait_until(explained, 30, "explain to name the running dependency")
        assert why is not None
        assert why["summary"] == f"waiting on dependencies: afterok on job {slow} (Running)"
        assert why["dependencies"] == [
            {"job": slow, "condition": "afterok", "states": {"Running": 1}, "verdict": "waiting"}
        ]
        table = cli("explain", waiting, "--ca", fed.ca, token=ADMIN_TOKEN, server=fed.server.url).stdout
        assert f"afterok on {slow} (1 Running): waiting" in table
        # The example pipeline through the CLI: one file, three jobs naming each other.
        example = str(REPO / "configs" / "examples" / "pipeline.yaml")
        submitted = cli_json(
            "submit", example, "--tenant", "alice", "--ca", fed.ca, token=ADMIN_TOKEN, server=fed.server.url
        )
        pipeline = [fed.wait_state(job_id, ENDED) for job_id in submitted["ids"]]
        assert [r["state"] for r in pipeline] == ["Succeeded"] * 3
        assert (
            pipeline[0]["end_time"] <= pipeline[1]["start_time"] <= pipeline[1]["end_time"] <= pipeline[2]["start_time"]
        )

        records = {
            job_id: fed.wait_state(job_id, ENDED) for job_id in [*chain, waiting, on_failure, on_success, gather]
        }
        for job_id in (*chain, waiting, on_failure, gather):
            assert records[job_id]["state"] == "Succeeded", records[job_id]
        # The chain ran in order: each link started after the one before ended.
        assert records[first]["end_time"] <= records[second]["start_time"]
        assert records[second]["end_time"] <= records[third]["start_time"]
        assert fed.admin.job(slow)["end_time"] <= records[waiting]["start_time"]
        # afternotok ran only after the failure; afterok on the failed job was cancelled, saying why.
        failed = fed.admin.job(failing)
        assert failed["state"] == "Failed"
        assert failed["end_time"] <= records[on_failure]["start_time"]
        cancelled = records[on_success]
        assert cancelled["state"] == "Cancelled" and cancelled["start_time"] is None
        assert cancelled["reason"] == f"dependency never satisfied: afterok on job {failing}, and {failing} is Failed"
        # The array's dependant started after the last element ended.
        elements = [fed.admin.job(element) for element in sweep["ids"]]
        assert all(e["state"] == "Succeeded" for e in elements)
        assert max(e["end_time"] for e in elements) <= records[gather]["start_time"]

        # A cycle is refused at submit, naming the ring, and nothing is created.
        before = len(list(fed.admin.jobs()))
        with pytest.raises(FedqError) as refused:
            fed.admin.submit_many(
                [_after(job("ping"), {"name": "pong"}), _after(job("pong"), {"name": "ping"})], tenant="alice"
            )
        assert refused.value.status == 422
        assert "dependency cycle: ping -> pong -> ping" in str(refused.value)
        assert len(list(fed.admin.jobs())) == before
    finally:
        fed.close()
