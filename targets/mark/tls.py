"""The dev certificate demarkus makes when none is configured: self-signed Ed25519, localhost/127.0.0.1/::1, 24 h.

Clients must skip verification against it (``--insecure``) unless they are given the PEM as a CA file, which
``write_pem`` provides so that verification-on paths can be tested too.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

DEV_NAMES = ("localhost",)
DEV_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class DevCertificate:
    certificate: x509.Certificate
    private_key: ed25519.Ed25519PrivateKey

    def write_pem(self, path: str | Path) -> Path:
        """The certificate alone, for a client's ``--mark-ca``; the key never leaves the process."""
        target = Path(path)
        target.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return target


def dev_certificate(
    extra_names: tuple[str, ...] = (), *, valid_for: _dt.timedelta = _dt.timedelta(hours=24)
) -> DevCertificate:
    key = ed25519.Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "demarkus dev (swarmgauge reference)")])
    now = _dt.datetime.now(_dt.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in (*DEV_NAMES, *extra_names)]
    alt_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in DEV_ADDRESSES]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + valid_for)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, None)
    )
    return DevCertificate(certificate, key)
