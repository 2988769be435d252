"""Keys, certificates and the token file of a local control plane.

One CA signs the apiserver's serving certificate (for 127.0.0.1 and localhost), so that
clients verify TLS from the kubeconfig instead of skipping verification. One RSA key signs
and verifies service-account tokens. The admin authenticates with a static bearer token
and is in ``system:masters``, so RBAC stays on and the admin still may do everything.
A second CA signs the front-proxy client certificate of the aggregation layer, with which
kube-apiserver reaches extension API servers such as metrics-server.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

ADMIN_USER = "kubesalvo-admin"
ADMIN_GROUP = "system:masters"
# The common name of the aggregation layer's client certificate (kube-apiserver's
# --requestheader-allowed-names).
FRONT_PROXY_CLIENT = "front-proxy-client"
_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    token_file: Path
    token: str
    front_proxy_ca: Path
    front_proxy_cert: Path
    front_proxy_key: Path


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def token_file_line(token: str, user: str, uid: str, groups: list[str]) -> str:
    """A line of kube-apiserver's ``--token-auth-file`` CSV: token,user,uid,"group1,group2"."""
    return f'{token},{user},{uid},"{",".join(groups)}"\n'


def _key_usage(*, sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=sign,
        crl_sign=sign,
        encipher_only=False,
        decipher_only=False,
    )


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    usage: x509.ObjectIdentifier | None,
    names: Sequence[x509.GeneralName] = (),
) -> x509.Certificate:
    """A certificate for ``key``: a CA when ``issuer`` is None (self-signed), else a leaf
    of that CA for ``usage`` (server or client auth) and ``names``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer[0].subject if issuer else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )
    if issuer is None:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=0), critical=True
        ).add_extension(_key_usage(sign=True), critical=True)
    else:
        builder = builder.add_extension(_key_usage(sign=False), critical=True)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def generate(folder: Path) -> Pki:
    """Writes a fresh CA, serving certificate, service-account key, token file and the
    aggregation layer's front-proxy CA and client certificate."""
    # Imported here so that the command line (``kubesalvo --help``, ``cluster down``) works
    # without the cryptography package; only starting a control plane needs it.
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID

    folder.mkdir(parents=True, exist_ok=True)
    # EC keys for TLS are fast to make; service-account tokens want RSA (RS256).
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("kubesalvo-local-ca", ca_key, None, None)
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving = _certificate(
        "kube-apiserver",
        serving_key,
        (ca, ca_key),
        ExtendedKeyUsageOID.SERVER_AUTH,
        [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default.svc"),
            x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
        ],
    )
    # The aggregation layer: kube-apiserver proxies to extension API servers (metrics-
    # server) with a client certificate of its own CA, which they trust through the
    # extension-apiserver-authentication ConfigMap, and pass the user in headers.
    proxy_ca_key = ec.generate_private_key(ec.SECP256R1())
    proxy_ca = _certificate("kubesalvo-front-proxy-ca", proxy_ca_key, None, None)
    proxy_key = ec.generate_private_key(ec.SECP256R1())
    proxy = _certificate(
        FRONT_PROXY_CLIENT, proxy_key, (proxy_ca, proxy_ca_key), ExtendedKeyUsageOID.CLIENT_AUTH
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = secrets.token_hex(24)

    pki = Pki(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        service_account_key=folder / "service-account.key",
        token_file=folder / "tokens.csv",
        token=token,
        front_proxy_ca=folder / "front-proxy-ca.crt",
        front_proxy_cert=folder / "front-proxy-client.crt",
        front_proxy_key=folder / "front-proxy-client.key",
    )
    pem = serialization.Encoding.PEM
    pki.ca_cert.write_bytes(ca.public_bytes(pem))
    pki.serving_cert.write_bytes(serving.public_bytes(pem))
    _write_private(pki.serving_key, _pem_key(serving_key))
    pki.front_proxy_ca.write_bytes(proxy_ca.public_bytes(pem))
    pki.front_proxy_cert.write_bytes(proxy.public_bytes(pem))
    _write_private(pki.front_proxy_key, _pem_key(proxy_key))
    _write_private(pki.service_account_key, _pem_key(sa_key))
    _write_private(
        pki.token_file, token_file_line(token, ADMIN_USER, ADMIN_USER, [ADMIN_GROUP]).encode()
    )
    return pki
