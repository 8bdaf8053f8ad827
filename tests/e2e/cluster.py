"""A federation on real etcd with member agents in their own processes, for end-to-end tests."""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import yaml

from federation.client import FedqClient
from federation.launcher import FedqProcess, ServerProcess, wait_until
from federation.store import EtcdConnection
from federation.tls import LOOPBACK_NAMES, ThrowawayCA
from tests.e2e.support import ADMIN_TOKEN, REPO

FAST = {"cyclePeriod": "200ms", "cluster": {"lostAfter": "3s", "requeueAfter": "6s"}}


def leader_of(servers: Sequence[ServerProcess], ca: str | None = None) -> ServerProcess | None:
    """The replica that says it leads, if one does (``ca``: the CA of https replicas)."""
    verify: ssl.SSLContext | bool = True if ca is None else ssl.create_default_context(cafile=ca)
    for server in servers:
        try:
            if server.alive and httpx.get(f"{server.url}/healthz", timeout=2, verify=verify).json()["leader"]:
                return server
        except httpx.HTTPError:
            continue
    return None


def replicas(
    etcd: EtcdConnection, work: Path, config: dict[str, Any], count: int = 2
) -> tuple[list[ServerProcess], str]:
    """``count`` server replicas (not started) on one key prefix of ``etcd``, each scheduling, over https
    with ``config``; and the file of the throwaway CA that signed their certificate."""
    config_file = work / "federation.yaml"
    config_file.write_text(yaml.safe_dump(config))
    ca = ThrowawayCA(work / "tls", time.time())
    pair = ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True)
    args = ["--queues", str(REPO / "configs" / "queues.yaml"), "--config", str(config_file)]
    args += ["--prefix", f"/e2e-{uuid.uuid4().hex}/"]
    env = {"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}
    servers = [ServerProcess(etcd, work / f"server{i}.log", args, env=env, tls=(pair, ca.cert)) for i in range(count)]
    return servers, str(ca.cert)


class Federation:
    """Server (own key prefix on the shared etcd, the API over https from a throwaway CA) plus agents;
    everything stopped by ``close``."""

    def __init__(self, etcd: EtcdConnection, work: Path, config: dict[str, Any] | None = None) -> None:
        self.work = work
        self.stack = ExitStack()
        config_file = work / "federation.yaml"
        config_file.write_text(yaml.safe_dump(config or FAST))
        ca = ThrowawayCA(work / "api-tls", time.time())  # TLS checks certificates against the wall clock
        self.ca = str(ca.cert)
        self.server = ServerProcess(
            etcd,
            work / "server.log",
            [
                "--queues",
                str(REPO / "configs" / "queues.yaml"),
                "--config",
                str(config_file),
                "--prefix",
                f"/e2e-{uuid.uuid4().hex}/",
            ],
            env={"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN},
            tls=(ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True), ca.cert),
        )
        self.stack.enter_context(self.server)
        self.admin = self.stack.enter_context(FedqClient(self.server.url, ADMIN_TOKEN, ca=self.ca))
        self.agents: dict[str, FedqProcess] = {}

    def agent_args(self, name: str, backend: str, extra: Sequence[str]) -> list[str]:
        return [
            "--name",
            name,
            "--backend",
            backend,
            "--report-interval",
            "200ms",
            "--credential-file",
            str(self.work / f"{name}.json"),
            "--ca",
            self.ca,
            *extra,
        ]

    def join(self, name: str, backend: str, *extra: str) -> FedqProcess:
        token = self.admin.create_join_token(name)
        agent = FedqProcess(
            ["agent", "join", "--server", self.server.url, "--token", token, *self.agent_args(name, backend, extra)],
            self.work / f"{name}.log",
        )
        self.agents[name] = self.stack.enter_context(agent)
        self.wait_ready(name)
        return agent

    def restart(self, name: str, backend: str, *extra: str) -> FedqProcess:
        agent = FedqProcess(["agent", "run", *self.agent_args(name, backend, extra)], self.work / f"{name}.log")
        self.agents[name] = self.stack.enter_context(agent)
        return agent

    def cluster_state(self, name: str) -> str | None:
        for cluster in self.admin.request("GET", "/v1/clusters")["items"]:
            if cluster["name"] == name:
                return str(cluster["state"])
        return None

    def wait_ready(self, name: str, timeout: float = 60) -> None:
        wait_until(lambda: self.cluster_state(name) == "Ready", timeout, f"cluster {name} to be Ready")

    def submit(self, spec: dict[str, Any], tenant: str = "alice") -> str:
        return str(self.admin.submit(spec, tenant=tenant)["id"])

    def wait_state(self, job_id: str, states: set[str], timeout: float = 60) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            job = self.admin.job(job_id)
            return job if job["state"] in states else None

        try:
            job = wait_until(reached, timeout, f"job {job_id} to reach {sorted(states)}", interval=0.1)
            assert job is not None  # wait_until returns the first truthy answer
            return job
        except TimeoutError as exc:
            logs = "\n".join(f"--- {n}\n{a.log(2000)}" for n, a in self.agents.items())
            details = f"job is {self.admin.job(job_id)}\n{logs}\n--- server\n{self.server.log(2000)}"
            raise AssertionError(f"{exc}; {details}") from None

    def close(self) -> None:
        self.stack.close()


def job(
    name: str,
    *,
    command: list[str] | None = None,
    replicas: int = 1,
    cpu: str = "500m",
    walltime: str = "2m",
    runtime: str | None = None,
    selector: dict[str, str] | None = None,
    min_available: int | None = None,
    max_retries: int | None = None,
) -> dict[str, Any]:
    task: dict[str, Any] = {"name": "main", "replicas": replicas, "resources": {"cpu": cpu}}
    if command is not None:
        task["command"] = command
    if runtime is not None:
        task["runtime"] = runtime
    spec: dict[str, Any] = {
        "queue": "research.vision",
        "walltime": walltime,
        "tasks": [task],
        "clusterSelector": selector or {},
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_retries is not None:
        spec["maxRetries"] = max_retries
    return {"metadata": {"name": name}, "spec": spec}
