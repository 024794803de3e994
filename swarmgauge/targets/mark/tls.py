"""The dev certificate demarkus makes when none is configured, field for field as its ``GenerateDevConfig`` makes it
(``server/internal/tls/tls.go``): self-signed Ed25519, serial 1, empty subject, SANs localhost/127.0.0.1/::1,
keyUsage digitalSignature, extKeyUsage serverAuth, no basicConstraints, valid 24 h.

A leaf, not a CA: verifiers that follow the Web PKI rules (qh3's rustls-webpki) refuse a CA certificate used as a
server's own, so a stand-in marked CA would fail where the real one passes. Clients must skip verification against it
(``--insecure``) unless they are given the PEM as a CA file, which ``write_pem`` provides so that verification-on
paths can be tested too.

``cryptography`` (8 MiB resident) is imported where a certificate is made or written: a Mark locustfile imports
this module through its embedded target's options, and a Locust worker, which starts no server, must not pay for it.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ed25519

DEV_NAMES = ("localhost",)
DEV_ADDRESSES = ("127.0.0.1", "::1")
DEV_SERIAL = 1  # Go's template: big.NewInt(1)


@dataclass(frozen=True)
class DevCertificate:
    certificate: x509.Certificate
    private_key: ed25519.Ed25519PrivateKey

    def write_pem(self, path: str | Path) -> Path:
        """The certificate alone, for a client's ``--mark-ca``; the key never leaves the process."""
        from cryptography.hazmat.primitives import serialization

        target = Path(path)
        target.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return target


def dev_certificate(
    extra_names: tuple[str, ...] = (), *, valid_for: _dt.timedelta = _dt.timedelta(hours=24)
) -> DevCertificate:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = ed25519.Ed25519PrivateKey.generate()
    empty = x509.Name([])  # Go leaves Subject unset; its SAN extension is then critical (RFC 5280 4.2.1.6)
    now = _dt.datetime.now(_dt.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in (*DEV_NAMES, *extra_names)]
    alt_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in DEV_ADDRESSES]
    digital_signature_only = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(empty)
        .issuer_name(empty)
        .public_key(key.public_key())
        .serial_number(DEV_SERIAL)
        .not_valid_before(now)
        .not_valid_after(now + valid_for)
        .add_extension(digital_signature_only, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=True)
        .sign(key, None)
    )
    return DevCertificate(certificate, key)
