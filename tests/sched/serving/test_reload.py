"""A serving certificate is reloaded when its files change: a real HTTPS server presents
the new one to connections made afterwards, keeps the old one when the new pair does not
load, and ``watch`` notices a rotation by itself."""

from __future__ import annotations

import asyncio
import shutil
import ssl

import pytest
from aiohttp import web

from kubesalvo.sched.client import ApiClient, Credentials
from kubesalvo.sched.metrics import SchedulerMetrics
from kubesalvo.sched.serving import reload
from kubesalvo.sched.serving.build import health_servers
from kubesalvo.sched.serving.options import ServingOptions
from kubesalvo.sched.serving.reload import CertificateFiles
from tests.helpers.tls import authority, common_name, leaf
from tests.sched.test_app import free_port


async def presented(port: int, ca: str) -> str:
    """The common name of the certificate the server at ``port`` presents now."""
    context = ssl.create_default_context(cafile=ca)
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        return common_name(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
    finally:
        writer.close()


@pytest.fixture
async def served(tmp_path):
    ca = authority(tmp_path / "pki", "ca")
    first = leaf(tmp_path / "pki", ca, "first", server=True)
    second = leaf(tmp_path / "pki", ca, "second", server=True)
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "tls.crt", live / "tls.key"
    shutil.copy(first.cert, cert)
    shutil.copy(first.key, key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    files = CertificateFiles(context, str(cert), str(key))
    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield files, port, str(ca.cert), second, (cert, key)
    finally:
        await runner.cleanup()


async def test_a_rotated_pair_is_presented_to_new_connections(served):
    files, port, ca, second, (cert, key) = served
    assert await presented(port, ca) == "first"
    assert not files.reload_if_changed()  # nothing changed yet
    shutil.copy(second.cert, cert)
    shutil.copy(second.key, key)
    assert files.reload_if_changed()
    assert await presented(port, ca) == "second"
    assert files.reloads == 1


async def test_a_pair_that_does_not_load_keeps_the_old_certificate(served):
    files, port, ca, second, (cert, key) = served
    shutil.copy(second.cert, cert)  # the key not yet rotated: they do not match
    assert not files.reload_if_changed()
    assert await presented(port, ca) == "first"
    shutil.copy(second.key, key)  # the rotation completes: the next look loads it
    assert files.reload_if_changed()
    assert await presented(port, ca) == "second"


async def test_watch_notices_a_rotation_by_itself(served):
    files, port, ca, second, (cert, key) = served
    watcher = asyncio.create_task(files.watch(interval=0.05))
    try:
        shutil.copy(second.cert, cert)
        shutil.copy(second.key, key)
        for _ in range(400):
            if files.reloads:
                break
            await asyncio.sleep(0.05)
    finally:
        watcher.cancel()
    assert files.reloads == 1
    assert await presented(port, ca) == "second"


async def test_the_secure_port_serves_a_rotated_certificate_without_a_restart(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(reload, "RELOAD_INTERVAL_SECONDS", 0.05)
    ca = authority(tmp_path / "pki", "ca")
    first = leaf(tmp_path / "pki", ca, "first", server=True)
    second = leaf(tmp_path / "pki", ca, "second", server=True)
    options = ServingOptions(
        bind_address="127.0.0.1",
        secure_port=free_port(),
        tls_cert_file=str(first.cert),
        tls_private_key_file=str(first.key),
    )
    # The API server is never asked: only TLS handshakes are made here.
    client = ApiClient(Credentials(server="http://127.0.0.1:1"))
    (server,) = health_servers(SchedulerMetrics(), options, client)
    await server.start()
    try:
        assert await presented(server.port, str(ca.cert)) == "first"
        shutil.copy(second.key, first.key)
        shutil.copy(second.cert, first.cert)
        for _ in range(400):
            if await presented(server.port, str(ca.cert)) == "second":
                break
            await asyncio.sleep(0.05)
        assert await presented(server.port, str(ca.cert)) == "second"
    finally:
        await server.stop()
        await client.close()
