"""A throwaway certificate authority, so tests and ``fedq up`` run TLS without an operator's PKI.

Keys are ECDSA P-256 (fast to make, accepted by etcd's Go TLS and gRPC's BoringSSL), written as
unencrypted PEM with mode 0600 next to their certificates. Validity starts an hour before ``now``
so a peer whose clock is a little behind still accepts them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
DEFAULT_VALIDITY = 30 * 86_400.0
_SKEW = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, as files."""

    cert: Path
    key: Path


class ThrowawayCA:
    """A CA made on the spot in ``directory``; everything it issues is written beside its own files."""

    def __init__(self, directory: Path, now: float, *, validity: float = DEFAULT_VALIDITY) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._not_before = datetime.datetime.fromtimestamp(now, datetime.UTC) - _SKEW
        self._not_after = self._not_before + _SKEW + datetime.timedelta(seconds=validity)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedq throwaway CA")])
        builder = self._builder(self._name, self._key.public_key())
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        builder = builder.add_extension(_key_usage(cert_sign=True), critical=True)
        self._cert = builder.sign(self._key, hashes.SHA256())
        self.cert = directory / "ca.pem"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, *, hosts: Sequence[str] = (), server: bool = False) -> KeyPair:
        """A certificate for ``name`` (its common name: etcd takes it as the user of a client cert).

        Every certificate may authenticate a client; ``server`` adds server use for ``hosts`` (DNS
        names or IP addresses), as an etcd member needs for its client and peer ports."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
        builder = self._builder(subject, key.public_key())
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        builder = builder.add_extension(_key_usage(cert_sign=False), critical=True)
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.directory / f"{name}.pem", self.directory / f"{name}-key.pem")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_private(pair.key, key)
        return pair

    def _builder(self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
        )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not cert_sign,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write_private(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    """Created 0600 from the start: the key is never readable by others, not even for a moment."""
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
