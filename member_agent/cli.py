"""``fedq agent join`` and ``fedq agent run``: what a cluster admin runs in each member cluster."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from federation.cli.context import ca_from, cert_from
from member_agent.backends import BACKENDS

if TYPE_CHECKING:
    from member_agent.backends import Backend
    from member_agent.config import AgentConfig
    from member_agent.credentials import Credential, CredentialStore
    from policies.clock import Clock


def _labels(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    labels = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--labels takes key=value pairs separated by commas, not {item!r}")
        labels[key.strip()] = value.strip()
    return labels


def _config(args: argparse.Namespace) -> AgentConfig:
    """The agent's config file with the flags over it; also sets up logging: an agent is a service
    (its modules are imported here, not when ``fedq``'s parser is built)."""
    from federation.logs import configure_logging
    from member_agent.config import AgentConfig, load_agent_config

    configure_logging()
    config = load_agent_config(args.config)
    overrides: dict[str, Any] = {}
    for flag, field in (
        ("name", "name"),
        ("server", "server"),
        ("backend", "backend"),
        ("credential_file", "credential_file"),
        ("credential_secret", "credential_secret"),
        ("report_interval", "report_interval"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            overrides[field] = value
    ca, cert = ca_from(args), cert_from(args)
    if ca:
        overrides["ca"] = ca
    if cert:
        overrides["cert"], overrides["key"] = cert
    if getattr(args, "labels", None):
        overrides["labels"] = {**config.labels, **_labels(args.labels)}
    if getattr(args, "ray_address", None):
        overrides["ray"] = {**config.ray, "address": args.ray_address}
    if getattr(args, "namespace", None):
        overrides["kubernetes"] = {**config.kubernetes, "namespace": args.namespace}
    merged = AgentConfig.model_validate({**config.model_dump(), **overrides})
    if not merged.name:
        raise ValueError("the agent needs a cluster name: --name NAME or `name:` in its config")
    return merged


def run_agent(
    config: AgentConfig, credential: Credential, backend: Backend, clock: Clock, stop: threading.Event
) -> None:
    import structlog

    from federation.client import FedqClient
    from member_agent.agent import Agent
    from member_agent.local_scheduler import LocalScheduler

    scheduler = LocalScheduler.from_file(clock, config.scheduler)
    with FedqClient(credential.server, credential.token, ca=config.ca, cert=config.client_cert()) as client:
        agent = Agent(
            client,
            credential.cluster,
            backend,
            scheduler,
            clock,
            report_interval=config.report_interval,
            lease=credential.lease,
        )
        structlog.get_logger("fedq.agent").info(
            "agent running", cluster=credential.cluster, backend=config.backend, server=credential.server
        )
        agent.run(stop)


@contextmanager
def _backend(config: AgentConfig, clock: Clock) -> Iterator[Backend]:
    """The configured backend, closed on the way out. Built before anything is sent to the federation,
    so bad backend settings (or a Ray or Kubernetes that cannot be reached) do not spend a join token."""
    from member_agent.backends import create_backend

    backend = create_backend(config.backend, dict(getattr(config, config.backend)), clock)
    try:
        yield backend
    finally:
        backend.close()


@contextmanager
def _credentials(config: AgentConfig) -> Iterator[CredentialStore]:
    """Where the credential is kept: the Secret of ``--credential-secret``, else the file."""
    from member_agent.credentials import FileCredentials

    if not config.credential_secret:
        yield FileCredentials(config.credential_path())
        return
    from member_agent.k8s_credentials import secret_credentials  # the Kubernetes client is heavy

    with secret_credentials(config.credential_secret, config.kubernetes) as store:
        yield store


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _join_token(args: argparse.Namespace) -> str:
    """``--token``, or the first line of ``--token-file`` (stdin for '-'): a file or a pipe keeps the
    token out of the process list, where any user of the machine could read it."""
    if args.token:
        return str(args.token)
    try:
        text = sys.stdin.readline() if args.token_file == "-" else Path(args.token_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the join token from {args.token_file}: {exc.strerror}") from None
    token = text.strip()
    if not token:
        raise ValueError(f"{args.token_file} holds no join token")
    return token


def cmd_join(args: argparse.Namespace) -> int:
    import structlog

    from federation.client import FedqClient
    from member_agent.credentials import Credential
    from policies.clock import SystemClock

    config = _config(args)
    clock = SystemClock()  # the one clock of this agent: its backend's and its scheduler's
    with _backend(config, clock) as backend:
        with FedqClient(config.server, ca=config.ca, cert=config.client_cert()) as client:
            reply = client.request(
                "POST",
                "/v1/clusters/join",
                body={
                    "token": _join_token(args),
                    "name": config.name,
                    "backend": config.backend,
                    "labels": config.labels,
                },
            )
        credential = Credential(
            server=config.server, cluster=config.name, token=reply["credential"], lease=reply.get("lease")
        )
        with _credentials(config) as store:
            store.save(credential)
        structlog.get_logger("fedq.agent").info("joined", cluster=config.name, credential=store.where)
        if not args.no_run:
            run_agent(config, credential, backend, clock, _stop_on_signals())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from policies.clock import SystemClock

    config = _config(args)
    with _credentials(config) as store:
        credential = store.load()
    if credential.cluster != config.name:
        raise ValueError(f"{store.where} holds the credential of {credential.cluster!r}, not {config.name!r}")
    clock = SystemClock()
    with _backend(config, clock) as backend:
        run_agent(config, credential, backend, clock, _stop_on_signals())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    agent = sub.add_parser(
        "agent",
        help="run a member-cluster agent",
        epilog="e.g. fedq agent join --server https://fedq:8080 --token T --name gpu-eu --backend kubernetes",
    )
    agent_sub = agent.add_subparsers(dest="agent_action", required=True)
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--config", help="agent YAML (see configs/agents/)")
    shared.add_argument("--name", help="cluster name")
    shared.add_argument("--backend", choices=list(BACKENDS), help="what runs the tasks, e.g. ray")
    shared.add_argument("--labels", help="cluster labels, e.g. region=eu,tier=gpu")
    shared.add_argument("--credential-file", help="where the cluster credential is kept (mode 0600)")
    shared.add_argument(
        "--credential-secret", help="keep the credential in this Kubernetes Secret instead, NAMESPACE/NAME"
    )
    shared.add_argument("--report-interval", help="e.g. 2s")
    shared.add_argument("--ray-address", help="Ray cluster address (default: a local Ray)")
    shared.add_argument("--namespace", help="Kubernetes namespace for job pods")
    shared.add_argument("--ca", help="CA file that signed an https server's certificate (env FEDQ_CA)")
    shared.add_argument("--cert", help="client certificate, for a server that requires one (env FEDQ_CERT)")
    shared.add_argument("--key", help="the client certificate's key (env FEDQ_KEY)")

    join = agent_sub.add_parser(
        "join",
        parents=[shared],
        help="join with a one-time token, then run",
        epilog="e.g. fedq agent join --server https://fedq:8080 --token T --config configs/agents/ray.yaml",
    )
    join.add_argument(
        "--server",
        help="federation API URL, or every replica's, comma-separated: tried in order (default: the config's server)",
    )
    token = join.add_mutually_exclusive_group(required=True)
    token.add_argument("--token", help="join token from `fedq token create --cluster NAME` (seen in `ps`)")
    token.add_argument(
        "--token-file",
        help="a file holding the join token, '-' for stdin: kept out of the command line, as fedq up does",
    )
    join.add_argument("--no-run", action="store_true", help="only join and store the credential")
    join.set_defaults(func=cmd_join)

    run = agent_sub.add_parser(
        "run",
        parents=[shared],
        help="run with the stored credential",
        epilog="e.g. fedq agent run --config configs/agents/ray.yaml   # after a restart: no new token",
    )
    run.add_argument("--server", help=argparse.SUPPRESS)
    run.set_defaults(func=cmd_run)
