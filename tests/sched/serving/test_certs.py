"""The self-signed serving certificate: valid for the local names, usable by a real TLS
server, and its key never left on disk."""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import tempfile
import threading

from cryptography import x509

from kubesalvo.sched.serving.certs import self_signed_pair, server_context


def names(cert_pem: bytes) -> tuple[set[str], set[str]]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(san.get_values_for_type(x509.DNSName)), {
        str(ip) for ip in san.get_values_for_type(x509.IPAddress)
    }


def test_the_certificate_names_localhost_the_host_and_the_bind_address():
    cert, _ = self_signed_pair("10.1.2.3")
    dns, ips = names(cert)
    assert {"localhost", socket.gethostname()} <= dns
    assert {"127.0.0.1", "::1", "10.1.2.3"} <= ips


def test_an_unspecified_bind_address_is_not_a_name():
    _, ips = names(self_signed_pair("0.0.0.0")[0])
    assert ipaddress.ip_address("0.0.0.0") not in {ipaddress.ip_address(i) for i in ips}


def test_a_client_trusting_the_generated_certificate_completes_a_handshake_on_loopback():
    before = set(os.listdir(tempfile.gettempdir()))
    context, cert = server_context(None, None, "127.0.0.1")
    assert cert is not None
    # The pair was written only to be loaded: nothing of it stays in $TMPDIR.
    assert {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("kubesalvo-serving-")} <= {
        n for n in before if n.startswith("kubesalvo-serving-")
    }
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"hello")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        client = ssl.create_default_context(cadata=cert.decode())
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            assert tls.recv(5) == b"hello"
        thread.join(5)


def test_given_files_are_used_instead_of_a_generated_pair(tmp_path):
    cert, key = self_signed_pair("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    _, generated = server_context(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), "0.0.0.0")
    assert generated is None
