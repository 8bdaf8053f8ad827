"""Many agents reporting every second while a large number of jobs runs (issue 33, point 6): the load and
its measurement, shared by ``tests/abuse/test_report_storm.py`` (scaled down, in CI) and
``bench/storm.py`` (the issue's size: 100 agents, 100,000 running jobs, ten minutes).

The agents are scripted (no backend, no local session): each joins, takes its assignments, reports them
Running at once and then reports every ``period`` seconds what a real agent would (``member_agent``): its
node shapes and every run it holds, or, when none of them changed, the revision of the report the
federation holds (``unchanged_since``). The measurement compares two windows of the same federation holding
the same running jobs: *quiet* (one agent reporting, every other silent but not yet lost) and *storm*
(every agent reporting every ``period``); in each, the probe times a held single submit and the first
page of ``GET /v1/jobs``, and the scheduler's cycles are read from its own histogram on ``/metrics``.

A report's latency is timed by the one agent that reports in both windows, in a process of its own: the
other agents share one process and one event loop (100 of them take a third of a core), so their own
timings also count the turns their loop takes to read each answer, which a real agent, alone on its
cluster's machine, does not wait for. Their timings are kept beside it (``Figures.load_reports``). No
agent shares a GIL with the probe that times the API.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.synchronize
import os
import random
import re
import ssl
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from federation.client import FedqClient

CPUS_PER_NODE = 1.0
RUNNING_STATES = {"Running"}


@dataclass(frozen=True)
class Figures:
    """One window's latencies (seconds) and the scheduler's cycles in it."""

    reports: list[float]
    submits: list[float]
    pages: list[float]
    cycles: int
    cycle_mean: float
    report_errors: int
    api_cpu: float  # seconds of CPU the API's process took in the window
    seconds: float
    served: float = float("nan")  # a report's mean seconds in the API (its histogram), the rest is the wire's
    agents_cpu: float = float("nan")  # seconds of CPU the agents' process took: past a core, it times itself
    load_reports: list[float] = field(default_factory=list)  # the other agents' own timings (see the module)

    @property
    def requests(self) -> int:
        """The API requests timed or made in the window: every report, and a submit and a page each probe."""
        return len(self.reports) + len(self.load_reports) + 2 * len(self.submits)

    def row(self) -> str:
        return (
            f"report p50 {_p(self.reports, 50):.3f} p99 {_p(self.reports, 99):.3f} s ({len(self.reports)}, "
            f"{self.report_errors} failed); submit p50 {_p(self.submits, 50):.3f} p99 {_p(self.submits, 99):.3f} s; "
            f"first page p50 {_p(self.pages, 50):.3f} p99 {_p(self.pages, 99):.3f} s; "
            f"cycle mean {self.cycle_mean:.3f} s over {self.cycles}; API process CPU {self.api_cpu / self.seconds:.0%}"
            f" ({1000 * self.api_cpu / max(1, self.requests):.1f} ms a request); "
            f"report mean {statistics.fmean(self.reports) if self.reports else float('nan'):.3f} s, "
            f"{self.served:.3f} s of it in the API; agents' process CPU {self.agents_cpu / self.seconds:.0%}"
            + (
                f"; the other agents' own report timings p50 {_p(self.load_reports, 50):.3f} "
                f"p99 {_p(self.load_reports, 99):.3f} s ({len(self.load_reports)})"
                if self.load_reports
                else ""
            )
        )


def _p(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def p99(values: list[float]) -> float:
    return _p(values, 99)


def ratios(quiet: Figures, loud: Figures) -> dict[str, float]:
    """The storm's figures over the quiet ones: the issue's bound is 2x for each."""
    return {
        "report p99": p99(loud.reports) / p99(quiet.reports),
        "submit p99": p99(loud.submits) / p99(quiet.submits),
        "first page p99": p99(loud.pages) / p99(quiet.pages),
        "cycle mean": loud.cycle_mean / quiet.cycle_mean,
    }


@dataclass
class Loader:
    """The agents' process and the switches the test steers it with."""

    process: multiprocessing.process.BaseProcess
    measure: multiprocessing.synchronize.Event  # every process has ramped: the quiet window begins
    storm: multiprocessing.synchronize.Event
    stop: multiprocessing.synchronize.Event
    results: Any  # a multiprocessing Queue: (phase, latencies, errors) and ("running", n)
    collected: dict[str, tuple[list[float], int]] = field(default_factory=dict)

    def take(self, phase: str) -> tuple[list[float], int]:
        """The latencies and failures the agents sent for ``phase`` (they send at each switch)."""
        while phase not in self.collected:
            name, latencies, errors = self.results.get(timeout=120)
            self.collected[name] = (latencies, errors)
        return self.collected.pop(phase)


def join_all(admin: FedqClient, server: str, ca: str, names: list[str], nodes: int) -> dict[str, str]:
    """Join each cluster; its credential by name."""
    credentials = {}
    with FedqClient(server, ca=ca) as anonymous:
        for name in names:
            token = admin.create_join_token(name, capacity={"cpu": nodes * CPUS_PER_NODE})
            joined = anonymous.request("POST", "/v1/clusters/join", body={"token": token, "name": name})
            credentials[name] = joined["credential"]
    return credentials


def start_agents(
    server: str, ca: str, credentials: dict[str, str], nodes: int, period: float, *, probe: bool = False
) -> Loader:
    """A process running the agents of ``credentials``: the load (they report in the storm only), or the
    ``probe`` (it reports in both windows)."""
    context = multiprocessing.get_context("spawn")
    measure, storm, stop = context.Event(), context.Event(), context.Event()
    results = context.Queue()
    process = context.Process(
        target=_agents_main,
        args=(server, ca, credentials, nodes, period, probe, measure, storm, stop, results),
        name="storm-probe" if probe else "storm-agents",
        daemon=True,
    )
    process.start()
    return Loader(process, measure, storm, stop, results)


def stop_agents(loader: Loader) -> None:
    loader.stop.set()
    loader.process.join(timeout=30)
    if loader.process.is_alive():
        loader.process.kill()
        loader.process.join(timeout=10)


def _agents_main(*args: Any) -> None:
    asyncio.run(_agents(*args))


async def _agents(
    server: str,
    ca: str,
    credentials: dict[str, str],
    nodes: int,
    period: float,
    probe: bool,
    measure: multiprocessing.synchronize.Event,
    storm: multiprocessing.synchronize.Event,
    stop: multiprocessing.synchronize.Event,
    results: Any,
) -> None:
    """Ramp: every agent reports until its nodes are full and ``measure`` is set (every process's are).
    Then the quiet window (only a ``probe`` reports) until ``storm`` is set, then every agent until
    ``stop``; each window's latencies go to ``results``."""
    names = sorted(credentials)
    running: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in names}
    stored: dict[str, int | None] = dict.fromkeys(names)  # the revision of the report the federation holds
    latencies: list[float] = []
    errors = [0]
    ramped = asyncio.Event()
    clients = {
        name: httpx.AsyncClient(
            base_url=server,
            verify=ssl.create_default_context(cafile=ca),
            headers={"Authorization": f"Bearer {credentials[name]}"},
            timeout=httpx.Timeout(30.0),
        )
        for name in names
    }

    async def report(name: str, timed: bool) -> None:
        held = running[name]
        updates = [
            {"job_id": run["job_id"], "epoch": run["epoch"], "state": "Running", "time": run["started_at"]}
            for run in held.values()
            if run.pop("new", False)
        ]
        free = nodes - len(held)
        body: dict[str, Any] = {
            "nodes": [
                {
                    "name": f"{name}-n",
                    "count": nodes,
                    "allocatable": {"cpu": CPUS_PER_NODE},
                    "free": {"cpu": CPUS_PER_NODE},
                },
            ]
            if free == nodes
            else [
                shape
                for shape in (
                    {"name": f"{name}-busy", "count": nodes - free, "allocatable": {"cpu": 1.0}, "free": {"cpu": 0.0}},
                    {"name": f"{name}-free", "count": free, "allocatable": {"cpu": 1.0}, "free": {"cpu": 1.0}},
                )
                if shape["count"]
            ],
            "running": [
                {"job_id": r["job_id"], "epoch": r["epoch"], "resources": {"cpu": 1.0}, "started_at": r["started_at"]}
                for r in held.values()
            ],
            "updates": updates,
        }
        revision = stored[name]
        if revision is not None and not updates:  # nothing new but the time, as a real agent sends it
            body = {"nodes": [], "running": [], "unchanged_since": revision}
        started = time.perf_counter()
        try:
            answer = await clients[name].post(f"/v1/clusters/{name}/report", json=body)
            answer.raise_for_status()
        except httpx.HTTPError:
            errors[0] += 1
            for update in updates:  # say them again next time
                held[update["job_id"]]["new"] = True
            return
        if timed:
            latencies.append(time.perf_counter() - started)
        reply = answer.json()
        stored[name] = reply.get("revision")
        now = time.time()
        for assignment in reply["assignments"]:
            if assignment["job_id"] not in held and len(held) < nodes:
                held[assignment["job_id"]] = {
                    "job_id": assignment["job_id"],
                    "epoch": assignment["epoch"],
                    "started_at": now,
                    "new": True,
                }
        for cancellation in reply["cancellations"]:
            held.pop(cancellation["job_id"], None)
        if reply["assignments"] or reply["cancellations"]:
            stored[name] = None  # its runs changed: the next report goes whole

    async def agent(index: int, name: str) -> None:
        await asyncio.sleep(period * index / len(names))  # spread over the period, as independent agents are
        while not stop.is_set():
            started = time.perf_counter()
            storming = storm.is_set()
            if not ramped.is_set() or storming or probe:
                await report(name, timed=ramped.is_set())
            await asyncio.sleep(max(0.0, period - (time.perf_counter() - started)))

    async def phases() -> None:
        while sum(len(held) for held in running.values()) < nodes * len(names) or any(
            run.get("new") for held in running.values() for run in held.values()
        ):
            await asyncio.sleep(0.2)
        await asyncio.sleep(2 * period)  # the last Running updates answered
        results.put(("running", [], sum(len(held) for held in running.values())))
        while not measure.is_set():
            await asyncio.sleep(0.05)
        latencies.clear()
        errors[0] = 0
        ramped.set()
        while not storm.is_set():
            await asyncio.sleep(0.05)
        results.put(("quiet", list(latencies), errors[0]))
        latencies.clear()
        errors[0] = 0
        while not stop.is_set():
            await asyncio.sleep(0.05)
        results.put(("storm", list(latencies), errors[0]))

    tasks = [asyncio.create_task(agent(i, name)) for i, name in enumerate(names)]
    await phases()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for client in clients.values():
        await client.aclose()


_CYCLE = re.compile(r"^fedq_scheduler_cycle_seconds_(sum|count) ([0-9.e+-]+)$", re.M)
_REPORT = re.compile(
    r'^fedq_api_request_seconds_(sum|count)\{route="/v1/clusters/\{name\}/report"\} ([0-9.e+-]+)$', re.M
)


def totals(server: str, token: str, ca: str) -> tuple[float, float, float, float]:
    """The scheduler's (seconds, cycles) and the API's (seconds, reports) so far, from their histograms.
    ``token`` is a tenant's: an admin's scrape also builds the usage series from every job (100,000
    here), which would load the windows."""
    text = httpx.get(
        f"{server}/metrics",
        headers={"Authorization": f"Bearer {token}"},
        verify=ssl.create_default_context(cafile=ca),
        timeout=30,
    ).text
    cycles, reports = dict(_CYCLE.findall(text)), dict(_REPORT.findall(text))
    return (
        float(cycles.get("sum", 0.0)),
        float(cycles.get("count", 0.0)),
        float(reports.get("sum", 0.0)),
        float(reports.get("count", 0.0)),
    )


def probe(admin: FedqClient, tenant: str, seconds: float, interval: float = 0.1) -> tuple[list[float], list[float]]:
    """Time a held single submit and the first page of ``GET /v1/jobs`` in turn for ``seconds``."""
    submits: list[float] = []
    pages: list[float] = []
    deadline = time.monotonic() + seconds
    spec = {"metadata": {"name": "probe"}, "spec": {"queue": "research.vision", "tasks": [{"name": "main"}]}}
    while time.monotonic() < deadline:
        started = time.perf_counter()
        admin.submit(spec, tenant=tenant, hold=True)
        submits.append(time.perf_counter() - started)
        started = time.perf_counter()
        admin.request("GET", "/v1/jobs", params={"limit": 50})
        pages.append(time.perf_counter() - started)
        time.sleep(interval * random.uniform(0.5, 1.5))
    return submits, pages


def window(
    admin: FedqClient, token: str, ca: str, tenant: str, seconds: float
) -> tuple[list[float], list[float], int, float, float]:
    """Probe for ``seconds``; the probe's latencies, the scheduler's cycles meanwhile (how many, their
    mean) and a report's mean seconds in the API."""
    before = totals(admin.server, token, ca)
    submits, pages = probe(admin, tenant, seconds)
    after = totals(admin.server, token, ca)
    cycles = int(after[1] - before[1])
    reports = after[3] - before[3]
    return (
        submits,
        pages,
        cycles,
        (after[0] - before[0]) / cycles if cycles else float("nan"),
        (after[2] - before[2]) / reports if reports else float("nan"),
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass(frozen=True)
class Storm:
    agents: int
    jobs: int
    seconds: float
    period: float = 1.0

    @property
    def nodes(self) -> int:
        return self.jobs // self.agents


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has taken (``/proc``; Linux)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Measured = tuple[list[float], list[float], int, float, float, float, float]
"""A window's submits, pages, cycles, cycle mean, report mean in the API, API CPU and agents' CPU."""


def _figures(
    reports: list[float], errors: int, measured: Measured, seconds: float, load_reports: list[float] | None = None
) -> Figures:
    submits, pages, cycles, cycle, served, api_cpu, agents_cpu = measured
    return Figures(
        reports, submits, pages, cycles, cycle, errors, api_cpu, seconds, served, agents_cpu, load_reports or []
    )


def run(
    fed: Any, storm: Storm, tenant: str = "alice", on_storm: Callable[[int], None] | None = None
) -> tuple[Figures, Figures]:
    """Fill ``storm.agents`` clusters with ``storm.jobs`` running jobs through the API and the scheduler,
    then measure the quiet window and the storm window, ``storm.seconds`` each. ``fed`` is a
    ``tests.e2e.cluster.Federation``; ``on_storm`` hears the API process's pid as the storm begins (to
    profile it: ``bench/storm.py --profile``)."""
    names = [f"storm-{i:03d}" for i in range(storm.agents)]
    credentials = join_all(fed.admin, fed.server.url, fed.ca, names, storm.nodes)
    timer = start_agents(
        fed.server.url, fed.ca, {names[0]: credentials[names[0]]}, storm.nodes, storm.period, probe=True
    )
    load = {name: credentials[name] for name in names[1:]}
    loader = start_agents(fed.server.url, fed.ca, load, storm.nodes, storm.period) if load else None
    loaders = [timer] if loader is None else [timer, loader]
    try:
        spec = {
            "metadata": {"name": "steady"},
            "spec": {
                "queue": "research.vision",
                "walltime": "24h",
                "tasks": [{"name": "main", "resources": {"cpu": CPUS_PER_NODE}}],
            },
        }
        total = storm.nodes * storm.agents
        for start in range(0, total, 1_000):  # a request each well within the client's timeout on a busy machine
            fed.admin.submit_many([spec] * min(1_000, total - start), tenant=tenant)
        running = sum(each.results.get(timeout=max(120.0, total / 200))[2] for each in loaders)
        assert running == total, f"{running} of {total} jobs running before the windows"
        for each in loaders:
            each.measure.set()
        time.sleep(2 * storm.period)  # every agent has seen it: only the probe reports now
        token = fed.admin.create_tenant_token(tenant)  # for /metrics: see totals
        pid = fed.server.process.pid
        agents = [each.process.pid for each in loaders]

        def agents_cpu() -> float:
            return sum(cpu_seconds(agent) for agent in agents if agent is not None)

        def measure() -> Measured:
            """A window: the probe's figures, and the CPU the API's and the agents' processes took in it."""
            cpu, agents_before = cpu_seconds(pid), agents_cpu()
            submits, pages, cycles, cycle, served = window(fed.admin, token, fed.ca, tenant, storm.seconds)
            return submits, pages, cycles, cycle, served, cpu_seconds(pid) - cpu, agents_cpu() - agents_before

        quiet = measure()
        for each in loaders:
            each.storm.set()
        time.sleep(storm.period)  # every agent has begun
        if on_storm is not None:
            on_storm(pid)
        loud = measure()
        for each in loaders:
            each.stop.set()
        quiet_reports, quiet_errors = timer.take("quiet")
        storm_reports, storm_errors = timer.take("storm")
        load_reports, load_errors = loader.take("storm") if loader is not None else ([], 0)
    finally:
        for each in loaders:
            stop_agents(each)
    return (
        _figures(quiet_reports, quiet_errors, quiet, storm.seconds),
        _figures(storm_reports, storm_errors + load_errors, loud, storm.seconds, load_reports),
    )
