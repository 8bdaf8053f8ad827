"""``fedq server``: the API server and, when it wins the leader election, the global scheduler."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from federation.store import EtcdConnection

ETCD_PASSWORD_ENV = "FEDQ_ETCD_PASSWORD"  # the etcd user's password: an env value, never a flag in ps
SHUTDOWN_GRACE = 2
"""Seconds a stopping server gives open requests to finish: job event streams never do, so they are
cut then, and their clients resume on a replica or the restarted server."""


def admin_token_from_env() -> tuple[str, bool]:
    """The admin token from FEDQ_ADMIN_TOKEN, or a fresh one (and whether it was generated)."""
    import secrets

    token = os.environ.get("FEDQ_ADMIN_TOKEN")
    if token:
        return token, False
    return f"fedq_admin_{secrets.token_urlsafe(24)}", True


def etcd_connection(args: argparse.Namespace) -> EtcdConnection:
    """The ``--etcd*`` options (and the password from the environment) as one connection."""
    from federation.store import EtcdConnection

    if not args.etcd:
        raise ValueError("--store etcd needs --etcd URL (e.g. https://127.0.0.1:2379)")
    password = os.environ.get(ETCD_PASSWORD_ENV) or None
    if args.etcd_user and password is None:
        raise ValueError(f"--etcd-user needs the user's password in {ETCD_PASSWORD_ENV}")
    return EtcdConnection.parse(
        args.etcd,
        ca=Path(args.etcd_ca) if args.etcd_ca else None,
        cert=Path(args.etcd_cert) if args.etcd_cert else None,
        key=Path(args.etcd_key) if args.etcd_key else None,
        user=args.etcd_user,
        password=password if args.etcd_user else None,
        maintenance_cert=Path(args.etcd_maintenance_cert) if args.etcd_maintenance_cert else None,
        maintenance_key=Path(args.etcd_maintenance_key) if args.etcd_maintenance_key else None,
    )


def etcd_flags(connection: EtcdConnection) -> tuple[list[str], dict[str, str]]:
    """The ``fedq server`` options and environment that make it use ``connection``."""
    flags = ["--store", "etcd", "--etcd", connection.urls]
    for flag, path in (
        ("--etcd-ca", connection.ca),
        ("--etcd-cert", connection.cert),
        ("--etcd-key", connection.key),
        ("--etcd-maintenance-cert", connection.maintenance_cert),
        ("--etcd-maintenance-key", connection.maintenance_key),
    ):
        if path is not None:
            flags += [flag, str(path)]
    env = {}
    if connection.user is not None and connection.password is not None:
        flags += ["--etcd-user", connection.user]
        env[ETCD_PASSWORD_ENV] = connection.password
    return flags, env


def check_api_tls(args: argparse.Namespace) -> None:
    """``--tls-cert``/``--tls-key`` serve https; ``--ca`` also requires every client to present a certificate
    that CA signed (mutual TLS); none of them: plain http, for loopback only."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("--tls-cert and --tls-key go together: the server's certificate and its private key")
    if args.ca and not args.tls_cert:
        raise ValueError("--ca (clients' certificates must be signed by it) needs --tls-cert and --tls-key")


async def serve(args: argparse.Namespace) -> None:
    # Imported here, not at the top: the web stack, the store client and the scheduler take most of a
    # second to load, which every other ``fedq`` command would pay at start-up.
    import uvicorn

    from federation.api.app import create_app
    from federation.api.connections import Guards, guarded, server_tls
    from federation.cli.output import say
    from federation.collector import keep_long_lived
    from federation.config import load_federation_config, load_yaml_file
    from federation.models import QueueTreeConfig
    from federation.scheduler.process import scheduler_runner
    from federation.store import open_store
    from policies.clock import SystemClock

    config = load_federation_config(args.config)
    check_api_tls(args)
    queues = QueueTreeConfig.model_validate(load_yaml_file(args.queues)) if args.queues else None
    token, generated = admin_token_from_env()
    if generated:
        say(f"admin token (set FEDQ_ADMIN_TOKEN to choose one): {token}", stderr=True)
    target = etcd_connection(args) if args.store == "etcd" else "memory"
    store = open_store(target, prefix=args.prefix, clock=SystemClock())
    clock = SystemClock()
    app = create_app(store, admin_token=token, config=config, clock=clock, queues=queues)
    # The API's caches grow with the jobs, and each full pass of the collector walks all of them: 74 ms
    # a pass on average at 100,000 jobs, about three a minute under load. As in the scheduler, what is
    # alive now is frozen and full passes come ten times more rarely (bench/HISTORY.md, issue 33).
    keep_long_lived()
    tls = server_tls(args.tls_cert, args.tls_key, args.ca) if args.tls_cert else None
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            http=guarded(Guards.of(config.api, tls)),  # TLS too: the guards time its handshake
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
        )
    )
    # uvicorn shuts down on SIGTERM, then raises it again; at the default action that kills the process
    # before the scheduler resigns (its lease would hold the next leader off for its ttl) and the
    # store closes. As an exception it unwinds through the ``finally`` below.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    runner = None
    if not args.no_scheduler:
        runner = scheduler_runner(target, args.prefix, store, config, clock)
        app.state.scheduler = runner
        runner.start()
    try:
        await server.serve()
    finally:
        if runner is not None:
            await runner.stop()
        await store.close()


def _exit_cleanly(signum: int, _frame: object) -> None:
    raise SystemExit(0)


def cmd_server(args: argparse.Namespace) -> int:
    if args.print_conf:
        from federation.config import load_federation_config
        from federation.scheduler.conf import render_global_conf

        print(render_global_conf(load_federation_config(args.config)), end="")
        return 0
    import asyncio  # the event loop and the web stack: loaded by the server only

    from federation.logs import configure_logging

    configure_logging()
    asyncio.run(serve(args))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    server = sub.add_parser(
        "server",
        help="run the federation API server",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="e.g. FEDQ_ADMIN_TOKEN=secret fedq server --queues configs/queues.yaml\n"
        "     fedq server --store etcd --etcd https://10.0.0.5:2379 --etcd-ca ca.pem \\\n"
        "         --tls-cert api.pem --tls-key api-key.pem --host 0.0.0.0",
    )
    server.add_argument(
        "--store", choices=["memory", "etcd"], default="memory", help="where jobs live: memory (a test) or etcd"
    )
    server.add_argument(
        "--etcd", help="etcd members for --store etcd, comma-separated: https://a:2379,https://b:2379 (fails over)"
    )
    server.add_argument("--etcd-ca", metavar="FILE", help="CA that signed the etcd members' certificates")
    server.add_argument("--etcd-cert", metavar="FILE", help="client certificate for etcd (mutual TLS)")
    server.add_argument("--etcd-key", metavar="FILE", help="the client certificate's private key")
    server.add_argument("--etcd-user", help=f"etcd user; its password is read from {ETCD_PASSWORD_ENV}")
    server.add_argument(
        "--etcd-maintenance-cert",
        metavar="FILE",
        help="client certificate of an etcd user with the root role, used only to defragment "
        "(store.defragAbove); without it the leader asks etcd as --etcd-user and says if refused",
    )
    server.add_argument("--etcd-maintenance-key", metavar="FILE", help="the maintenance certificate's private key")
    server.add_argument("--prefix", default="/fedq/", help="key prefix in the store")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on, e.g. 0.0.0.0 (all)")
    server.add_argument("--tls-cert", metavar="FILE", help="serve https with this certificate (PEM, with its chain)")
    server.add_argument("--tls-key", metavar="FILE", help="the --tls-cert certificate's private key")
    server.add_argument(
        "--ca", metavar="FILE", help="require every client to present a certificate this CA signed (mutual TLS)"
    )
    server.add_argument("--port", type=int, default=8080, help="port to listen on, e.g. 8443")
    server.add_argument("--queues", help="queue tree YAML to apply at start-up, e.g. configs/queues.yaml")
    server.add_argument("--config", help="the federation's settings, e.g. configs/federation.yaml")
    server.add_argument("--log-level", default="warning", help="the web server's access log level, e.g. info")
    server.add_argument("--no-scheduler", action="store_true", help="serve the API only (another replica schedules)")
    server.add_argument(
        "--print-conf", action="store_true", help="print the global scheduler conf built from --config, and exit"
    )
    server.set_defaults(func=cmd_server)
