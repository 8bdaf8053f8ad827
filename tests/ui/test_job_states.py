"""Issue 32 acceptance 4: a job's page renders for every state a tenant's job can be in, and a Reserved,
a preempting and an Unschedulable job's pages say why they wait (the reservation's cluster and start;
the jobs it will preempt; the reason) with the spec's task names and shapes, as the explain JSON and
``fedq explain`` say it; a job it preempted shows that in its events.

Its own federation: one simulated cluster of 4 nodes of 10 cpu, a long job holding one node, so a gang
of 4 x 10 cpu behind it reserves (``reservation.after`` is 0 by default) and a second one waits Pending.
Preemption has another (``preemption``): its window, from the eviction to the victims' cluster saying
they stopped, lasts a report interval, so the agent is stopped (SIGSTOP) across it and let go after."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from federation.launcher import FedqProcess, wait_until
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import cli, cli_json
from tests.ui.pages import Watched

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

NODES = {"simulated": {"nodes": [{"count": 4, "namePrefix": "n", "resources": {"cpu": 10, "memory": "64Gi"}}]}}


@dataclass
class States:
    fed: Federation
    token: str  # alice's: every page here is looked at as the tenant
    ids: dict[str, str]  # a label ("Reserved", "held", ...) -> that job's id

    @property
    def url(self) -> str:
        return self.fed.server.url

    def fedq(self, *args: str) -> Any:
        return cli_json(*args, "--ca", self.fed.ca, token=self.token, server=self.url)


def gang(name: str) -> dict[str, Any]:
    task = {"name": "worker", "replicas": 4, "resources": {"cpu": "10"}, "runtime": "1m"}
    return {"metadata": {"name": name}, "spec": {"queue": "research.vision", "walltime": "20m", "tasks": [task]}}


@pytest.fixture(scope="module")
def states(etcd_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[States]:
    work = tmp_path_factory.mktemp("ui-states")
    agent = work / "east-agent.yaml"
    agent.write_text(yaml.safe_dump(NODES))
    fed = Federation(etcd_server.connection, work, FAST)
    try:
        fed.join("east", "simulated", "--config", str(agent), "--labels", "region=eu")
        ids: dict[str, str] = {}

        def submit(label: str, spec: dict[str, Any], state: str, **options: Any) -> None:
            ids[label] = str(fed.admin.submit(spec, tenant="alice", **options)["id"])
            fed.wait_state(ids[label], {state})

        submit("Succeeded", job("done", cpu="1", runtime="1s"), "Succeeded")
        submit("Failed", job("overran", cpu="1", runtime="1m", walltime="1s", max_retries=0), "Failed")
        submit("Running", job("long", cpu="10", runtime="10m", walltime="15m"), "Running")
        submit("Reserved", gang("gang"), "Reserved")  # 40 cpu, 30 free until the long job ends
        submit("Pending", gang("second-gang"), "Pending")  # behind it: one reservation at a time (depth 1)
        submit("held", job("held", cpu="1"), "Pending", hold=True)
        submit("Cancelled", job("cancelled", cpu="1"), "Pending", hold=True)
        fed.admin.cancel(ids["Cancelled"])
        fed.wait_state(ids["Cancelled"], {"Cancelled"})
        nameless = job("nowhere", cpu="1", selector={"region": "mars"})
        del nameless["spec"]["tasks"][0]["name"]  # the API names it: "main"
        submit("Unschedulable", nameless, "Unschedulable", allow_unschedulable=True)
        yield States(fed, fed.admin.create_tenant_token("alice"), ids)
    finally:
        fed.close()


class Frozen:
    """A process stopped (SIGSTOP) until ``let_go`` (SIGCONT; again is a no-op): an agent so stopped
    neither reports nor acts on stop orders, so what the federation asked of its cluster stays asked."""

    def __init__(self, process: FedqProcess) -> None:
        assert process.process is not None and process.alive
        self.pid: int | None = process.process.pid
        os.kill(self.pid, signal.SIGSTOP)

    def let_go(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGCONT)
            self.pid = None


@dataclass
class Preemption:
    states: States  # ids: "preempting" -> the gang making room; victims: the jobs it stops
    victims: list[str]
    east: Frozen  # its agent, stopped across the preemption


@pytest.fixture
def preemption(etcd_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Preemption]:
    """east: 2 nodes of 10 cpu, each held by a preemptible job of priority 0 (grace 0 s: preemptible at
    once); alice's gang of 2 x 10 cpu of priority 10 comes after them, while east's agent is stopped:
    the federation asks east to stop both and the gang waits "preempting" until east says they stopped.
    A cluster is lost (and an agent's lease runs out) only after 5 minutes here, so a stopped agent
    changes nothing else."""
    work = tmp_path_factory.mktemp("ui-preemption")
    agent_config = work / "east-agent.yaml"
    two = {"nodes": [{"count": 2, "namePrefix": "n", "resources": {"cpu": 10, "memory": "64Gi"}}]}
    agent_config.write_text(yaml.safe_dump({"simulated": two}))
    config = {
        **FAST,
        "cluster": {"lostAfter": "5m", "requeueAfter": "10m"},
        "preemption": {"enabled": True, "grace": "0s"},
    }
    fed = Federation(etcd_server.connection, work, config)
    east: Frozen | None = None
    try:
        agent = fed.join("east", "simulated", "--config", str(agent_config))
        victims = []
        for i in range(2):
            spec = job(f"low-{i}", cpu="10", runtime="10m", walltime="15m")
            spec["spec"]["preemptible"] = True
            victims.append(fed.submit(spec))
        for victim in victims:
            fed.wait_state(victim, {"Running"})
        east = Frozen(agent)
        spec = gang("urgent")
        spec["spec"]["tasks"][0].update(replicas=2, runtime="10m")
        spec["spec"]["priority"] = 10
        urgent = fed.submit(spec)

        def preempting() -> bool:
            why = fed.admin.request("GET", f"/v1/jobs/{urgent}/explain")
            asked = all(fed.admin.job(v)["evicting"] for v in victims)
            return asked and "preempting" in [r["code"] for r in why.get("reasons", [])]

        wait_until(preempting, 30, f"job {urgent} to be preempting", interval=0.1)
        states = States(fed, fed.admin.create_tenant_token("alice"), {"preempting": urgent})
        yield Preemption(states, victims, east)
    finally:
        if east is not None:
            east.let_go()
        fed.close()


def _absolute(summary: str) -> str:
    return re.sub(r" \((in|for) [^)]*\)", "", summary)


def open_job(states: States, watched: Watched, label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Open a job's page as its tenant; the record and the explanation the page was given."""
    job_id = states.ids[label]
    watched.login(states.url, states.token)
    watched.page.goto(f"{states.url}/ui/#/job/{job_id}")
    watched.page.wait_for_selector("#explain-summary, section[data-view='job'] .error")
    text = watched.page.inner_text("#view")
    assert "Could not load" not in text and "undefined" not in text, text
    record = [body for url, body in watched.answers if url.endswith(f"/v1/jobs/{job_id}")][-1]
    whys = [body for url, body in watched.answers if url.endswith(f"/v1/jobs/{job_id}/explain")]
    # The page reads it again when its events stream starts, and the answer drawn may not be recorded yet when
    # the page is read: compare without the relative "(in 14m43s)", which moves by a second between answers.
    drawn = _absolute(watched.page.inner_text("#explain-summary"))
    assert drawn in [_absolute(why["summary"]) for why in whys]
    return record, whys[-1]


@pytest.mark.parametrize(
    ("label", "state"),
    [
        ("Pending", "Pending"),
        ("Reserved", "Reserved"),
        ("Unschedulable", "Unschedulable"),
        ("Running", "Running"),
        ("Succeeded", "Succeeded"),
        ("Failed", "Failed"),
        ("Cancelled", "Cancelled"),
        ("held", "Pending"),
    ],
)
def test_the_job_page_renders_in_every_state(states: States, watched: Watched, label: str, state: str) -> None:
    record, why = open_job(states, watched, label)
    assert record["state"] == why["state"] == watched.page.inner_text("#job-state") == state
    shapes = "; ".join(f"{t['name']}: {t['replicas']} × cpu={t['resources']['cpu']:g}" for t in record["spec"]["tasks"])
    assert watched.page.inner_text("#spec-tasks").startswith(shapes)
    if label == "held":
        holder = record["held_by"]  # the admin who submitted it held for alice
        assert why["held"]["by"] == holder and why["summary"].startswith(f"held by {holder}")
        assert watched.page.inner_text("#held").startswith(f"Held by {holder} since ")
    # Dispatched and Admitted last a report interval here; their page is a Running job's (no
    # position, no reservation: the explanation of a job that is not queued is its summary).


def test_a_reserved_jobs_page_shows_its_reservation(states: States, watched: Watched) -> None:
    record, why = open_job(states, watched, "Reserved")
    assert watched.page.inner_text("#spec-tasks") == "worker: 4 × cpu=10; walltime 20m"
    reservation = why["reservation"]
    assert reservation["clusters"] == {"east": 4}  # cluster -> the job's tasks held there (docs/ui.md)
    shown = watched.page.locator("#reservation")
    assert shown.get_attribute("data-clusters") == "east"
    assert float(shown.get_attribute("data-start") or 0) == reservation["start"]
    assert shown.inner_text().startswith("Reservation on east (4 tasks) from ")
    assert "reserved" in [r["code"] for r in why["reasons"]]
    assert watched.page.locator("#reasons li[data-code='reserved']").count() == 1
    assert why["summary"].startswith("holds a reservation on east from ")
    # the CLI says the same of it: its JSON is the API's, its table has the reservation's row
    assert states.fedq("explain", record["id"])["reservation"]["clusters"] == {"east": 4}
    table = cli("explain", record["id"], "--ca", states.fed.ca, token=states.token, server=states.url).stdout
    rows = [" ".join(line.split()) for line in table.splitlines()]
    assert any(row.startswith("reservation │ east (4 tasks) from ") for row in rows), table
    watched.screenshot("job-reserved")


def test_an_unschedulable_jobs_page_says_why(states: States, watched: Watched) -> None:
    record, why = open_job(states, watched, "Unschedulable")
    assert record["spec"]["tasks"][0]["name"] == "main"  # given no name, the API says the default
    assert watched.page.inner_text("#spec-tasks") == "main: 1 × cpu=1; walltime 2m"
    reason = "no cluster has the labels region=mars"
    assert record["reason"] == reason and why["summary"] == f"Unschedulable: {reason}"
    assert reason in watched.page.inner_text("#explain")
    assert watched.page.locator("#reservation").count() == 0
    watched.screenshot("job-unschedulable")


def test_a_preempting_job_and_its_victims_pages(preemption: Preemption, watched: Watched) -> None:
    states = preemption.states
    record, why = open_job(states, watched, "preempting")
    assert record["state"] == why["state"] == watched.page.inner_text("#job-state") == "Pending"
    assert watched.page.inner_text("#spec-tasks") == "worker: 2 × cpu=10; walltime 20m"
    message = "will preempt 2 jobs on east"
    assert why["summary"] == f"{message}: it starts once they have stopped"
    [reason] = [r for r in why["reasons"] if r["code"] == "preempting"]
    assert reason["message"] == message
    assert watched.page.inner_text("#reasons li[data-code='preempting']") == f"{reason['policy']}: {message}"
    assert why["reservation"] is None and watched.page.locator("#reservation").count() == 0
    table = cli("explain", record["id"], "--ca", states.fed.ca, token=states.token, server=states.url).stdout
    assert message in " ".join(table.split()), table
    watched.screenshot("job-preempting")

    # east goes on: it stops both, they go back to the queue as preempted, and the gang starts in their
    # room (for 10 minutes: the victims wait on, Pending or Reserved behind it)
    preemption.east.let_go()
    states.fed.wait_state(record["id"], {"Running"})
    preempted = f"preempted: by higher-priority job {record['id']}"

    def requeued(victim: str) -> bool:
        events = states.fed.admin.job(victim)["events"]
        return any((e["from"], e["to"], e["reason"]) == ("Running", "Pending", preempted) for e in events)

    wait_until(lambda: all(map(requeued, preemption.victims)), 30, "the victims to be requeued", interval=0.1)
    states.ids["victim"] = preemption.victims[0]
    victim, why = open_job(states, watched, "victim")
    assert victim["preemptions"] == 1 and why["state"] in ("Pending", "Reserved")
    shown = watched.page.locator("#timeline li[data-to='Pending']", has_text=f"Running → Pending: {preempted}")
    shown.wait_for()
    assert shown.count() == 1
    watched.screenshot("job-preempted")
