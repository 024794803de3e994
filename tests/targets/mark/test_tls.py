"""The dev certificate: the real demarkus one's fields, and a client given it as a CA file verifies it on each engine."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID

from swarmgauge.quic.driver import TLSVerificationFailed
from swarmgauge.targets.mark.tls import dev_certificate


def test_the_dev_certificate_has_the_fields_of_demarkus_generate_dev_config():
    certificate = dev_certificate().certificate
    assert isinstance(certificate.public_key(), ed25519.Ed25519PublicKey)
    assert certificate.serial_number == 1
    assert certificate.subject == certificate.issuer == x509.Name([])
    assert certificate.not_valid_after_utc - certificate.not_valid_before_utc == datetime.timedelta(hours=24)
    usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_cert_sign
    extended = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(extended) == [ExtendedKeyUsageOID.SERVER_AUTH]
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert names.critical  # the subject is empty
    assert names.value.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(a) for a in names.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    with pytest.raises(x509.ExtensionNotFound):  # a leaf: a CA certificate as a server's own fails Web PKI checks
        certificate.extensions.get_extension_for_class(x509.BasicConstraints)


@pytest.mark.integration
def test_a_client_given_the_dev_certificate_as_ca_file_verifies_it(start_mark, mark_client, tmp_path):
    pem = tmp_path / "dev.pem"
    server = start_mark("--cert-out", str(pem))
    port = server.url.rsplit(":", 1)[1]
    client = mark_client(f"mark://localhost:{port}", insecure=False, ca_file=str(pem), server_name="localhost")
    assert client.fetch("/health").status == "ok"


@pytest.mark.integration
def test_the_dev_certificate_does_not_verify_for_another_name(start_mark, mark_client, tmp_path):
    pem = tmp_path / "dev.pem"
    server = start_mark("--cert-out", str(pem))
    client = mark_client(server.url, insecure=False, ca_file=str(pem), server_name="other.example")
    with pytest.raises(TLSVerificationFailed, match=r"other\.example"):
        client.fetch("/health")
