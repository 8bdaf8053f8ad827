"""The throwaway CA: what it issues is signed by it, names loopback, is valid around the injected now,
and its keys are private to the owner."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from federation.tls import LOOPBACK_NAMES, ThrowawayCA

NOW = 1_800_000_000.0


def test_a_server_certificate_is_signed_by_the_ca_for_loopback_and_valid_around_now(tmp_path: Path) -> None:
    ca = ThrowawayCA(tmp_path, NOW, validity=86_400)
    pair = ca.issue("etcd-member", hosts=LOOPBACK_NAMES, server=True)

    root = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    cert.verify_directly_issued_by(root)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(names.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address(h) for h in ("127.0.0.1", "::1")}
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    now = datetime.datetime.fromtimestamp(NOW, datetime.UTC)
    assert cert.not_valid_before_utc < now < cert.not_valid_after_utc <= now + datetime.timedelta(days=1)


def test_a_client_certificate_names_its_user_and_serves_no_server(tmp_path: Path) -> None:
    ca = ThrowawayCA(tmp_path, NOW)
    pair = ca.issue("fedq")

    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "fedq"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    assert (pair.key.stat().st_mode & 0o777) == 0o600
    assert not list(tmp_path.glob("ca-key*"))  # the CA's own key never leaves memory
