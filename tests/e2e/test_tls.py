"""The API over TLS: a real ``fedq server --tls-cert/--tls-key`` on a loopback port, its certificate from a
throwaway CA. The CLI (``--ca`` or ``FEDQ_CA``), ``FedqClient`` (``ca=``) and an agent (``--ca``) that
trust the CA get through; a client that does not is refused, and told what to pass. With ``--ca`` the
server also refuses a client without a certificate that CA signed (mutual TLS)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from federation.client import FedqClient, FedqError
from federation.launcher import FedqProcess, free_port, wait_until
from federation.store import EtcdServer
from federation.tls import LOOPBACK_NAMES, ThrowawayCA
from tests.e2e.cluster import Federation
from tests.e2e.support import ADMIN_TOKEN, cli, cli_json

pytestmark = pytest.mark.slow

ADMIN_ENV = {"FEDQ_ADMIN_TOKEN": ADMIN_TOKEN}


@pytest.fixture
def ca(tmp_path: Path) -> ThrowawayCA:
    return ThrowawayCA(tmp_path / "ca", time.time())  # TLS checks certificates against the wall clock


def refusal(client: FedqClient) -> FedqError:
    with pytest.raises(FedqError) as caught:
        client.queues()
    return caught.value


@pytest.mark.etcd
def test_the_api_over_tls_trusts_only_clients_given_the_ca(
    etcd_server: EtcdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed = Federation(etcd_server.connection, tmp_path)  # the API over https, its certificate from a CA of its own
    try:
        url = fed.server.url
        assert url.startswith("https://127.0.0.1:")
        assert fed.admin.queues()["queues"]
        with FedqClient(url, ADMIN_TOKEN) as untrusting:
            refused = refusal(untrusting)
        assert refused.status == 0
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused) and "--ca FILE or FEDQ_CA" in str(refused)
        with FedqClient(url.replace("https://", "http://"), ADMIN_TOKEN) as plain:
            assert refusal(plain).status == 0  # plain http to the TLS port is no way around it

        without = cli("queues", token=ADMIN_TOKEN, server=url, check=False)
        assert without.returncode == 3
        assert "--ca FILE or FEDQ_CA" in without.stderr
        trusting = ("--ca", fed.ca)
        ops = cli_json("token", "create", "--admin", "ops", "--ttl", "1h", *trusting, token=ADMIN_TOKEN, server=url)
        assert (ops["kind"], ops["name"]) == ("admin", "ops")
        monkeypatch.setenv("FEDQ_CA", fed.ca)  # the CLI reads it as it reads --ca
        table = cli("token", "list", token=ops["token"], server=url).stdout
        assert ops["id"] in table and "bootstrap" in table and ops["token"] not in table
        assert cli_json("token", "revoke", ops["id"], token=ADMIN_TOKEN, server=url)["state"] == "revoked"
        refused_cli = cli("token", "list", token=ops["token"], server=url, check=False)
        assert refused_cli.returncode == 1 and f"token {ops['id']} was revoked" in refused_cli.stderr

        fed.join("tls-east", "simulated")  # the agent joins and reports over https (--ca), or this times out
    finally:
        fed.close()


def test_with_a_client_ca_the_server_refuses_clients_without_its_certificate(ca: ThrowawayCA, tmp_path: Path) -> None:
    served = ca.issue("fedq-api", hosts=LOOPBACK_NAMES, server=True)
    ops = ca.issue("ops")
    stranger = ThrowawayCA(tmp_path / "other-ca", time.time()).issue("stranger")
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    tls = ["--tls-cert", str(served.cert), "--tls-key", str(served.key), "--ca", str(ca.cert)]
    server = FedqProcess(["server", "--store", "memory", "--port", str(port), *tls], tmp_path / "server.log", ADMIN_ENV)
    with server, FedqClient(url, ADMIN_TOKEN, ca=str(ca.cert), cert=(str(ops.cert), str(ops.key))) as admin:

        def answers() -> bool:
            assert server.alive, server.log()
            try:
                return bool(admin.request("GET", "/healthz")["ok"])
            except FedqError:
                return False

        wait_until(answers, 60, "fedq server to answer /healthz over mutual TLS", interval=0.1)
        assert admin.queues() == {"queues": []}
        for cert in (None, (str(stranger.cert), str(stranger.key))):
            with FedqClient(url, ADMIN_TOKEN, ca=str(ca.cert), cert=cert) as client:
                assert refusal(client).status == 0
        got_in = cli_json(
            "queues",
            "--ca",
            str(ca.cert),
            "--cert",
            str(ops.cert),
            "--key",
            str(ops.key),
            token=ADMIN_TOKEN,
            server=url,
        )
        assert got_in == {"queues": []}
