"""The local CA, serving certificate, service-account key and token file."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kubesalvo.sched.cluster import pki


def test_serving_certificate_is_signed_by_the_ca_for_loopback(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path)
    ca = x509.load_pem_x509_certificate(keys.ca_cert.read_bytes())
    serving = x509.load_pem_x509_certificate(keys.serving_cert.read_bytes())
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.IPv4Address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    # The CA file is what clients load as their trust store.
    ssl.create_default_context(cafile=str(keys.ca_cert))


def test_service_account_key_is_rsa_and_private_files_are_private(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path)
    key = serialization.load_pem_private_key(keys.service_account_key.read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    for path in (keys.serving_key, keys.service_account_key, keys.token_file):
        assert path.stat().st_mode & 0o077 == 0


def test_token_file_makes_the_admin_a_system_master(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path)
    assert keys.token_file.read_text() == (
        f'{keys.token},{pki.ADMIN_USER},{pki.ADMIN_USER},"system:masters"\n'
    )
    assert keys.token != pki.generate(tmp_path / "again").token


def test_token_file_line_quotes_several_groups() -> None:
    line = pki.token_file_line("tok", "alice", "1", ["system:masters", "devs"])
    assert line == 'tok,alice,1,"system:masters,devs"\n'


def test_the_front_proxy_client_certificate_is_signed_by_its_own_ca(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path)
    proxy_ca = x509.load_pem_x509_certificate(keys.front_proxy_ca.read_bytes())
    client = x509.load_pem_x509_certificate(keys.front_proxy_cert.read_bytes())
    client.verify_directly_issued_by(proxy_ca)
    ca = x509.load_pem_x509_certificate(keys.ca_cert.read_bytes())
    assert proxy_ca.subject != ca.subject  # a CA apart from the one clients trust
    (name,) = client.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    assert name.value == pki.FRONT_PROXY_CLIENT
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.ExtendedKeyUsageOID.CLIENT_AUTH in usage
    assert keys.front_proxy_key.stat().st_mode & 0o077 == 0
