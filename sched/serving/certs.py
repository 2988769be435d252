"""The TLS context of the secure port: the given certificate, or a self-signed one.

Like kube-scheduler without ``--tls-cert-file``, a fresh self-signed certificate is made
at start for ``localhost``, the host name, the loopback addresses and the bind address.
Python's ``ssl`` loads certificates only from files, so the generated pair is written to
a private temporary folder (``$TMPDIR``: an emptyDir in the manifests, whose root file
system is read-only), loaded, and removed at once: the key never stays on disk. Given
files are reloaded when they change (``serving_tls``, see ``reload``).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import tempfile
from pathlib import Path

from kubesalvo.sched.serving.reload import CertificateFiles

_VALIDITY = datetime.timedelta(days=365)


def self_signed_pair(bind_address: str) -> tuple[bytes, bytes]:
    """A PEM certificate and PEM private key valid for this host's local names."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    host = socket.gethostname()
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    if host and host != "localhost":
        names.append(x509.DNSName(host))
    addresses = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    try:
        bound = ipaddress.ip_address(bind_address)
        if not bound.is_unspecified:
            addresses.add(bound)
    except ValueError:
        names.append(x509.DNSName(bind_address))
    names += [x509.IPAddress(address) for address in sorted(addresses, key=str)]
    key = ec.generate_private_key(ec.SECP256R1())
    common_name = f"{host or 'localhost'}@kubesalvo"
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def serving_tls(
    cert_file: str | None, key_file: str | None, bind_address: str
) -> tuple[ssl.SSLContext, CertificateFiles | None]:
    """The serving context, and the given files to watch for rotation (None when the
    certificate was generated)."""
    if not (cert_file and key_file):
        context, _ = server_context(None, None, bind_address)
        return context, None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context, CertificateFiles(context, cert_file, key_file)


def server_context(
    cert_file: str | None, key_file: str | None, bind_address: str
) -> tuple[ssl.SSLContext, bytes | None]:
    """The serving context; the second value is the generated certificate's PEM (None when
    the files were given), for callers that want to trust it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
        return context, None
    cert_pem, key_pem = self_signed_pair(bind_address)
    with tempfile.TemporaryDirectory(prefix="kubesalvo-serving-") as folder:
        cert_path, key_path = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        cert_path.write_bytes(cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context, cert_pem
