"""Who may call the extender: HTTPS with its own certificate, /bind and /preempt only with
a client certificate the configured CA signed (what kube-scheduler's tlsConfig sends),
flags that would leave them open refused; a small default body limit; one clean line for
a busy port. Real servers and real HTTP clients on loopback."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import aiohttp
import msgspec
import pytest

from kubesalvo.sched.extender.config import DEFAULT_MAX_REQUEST_BYTES
from kubesalvo.sched.extender.guard import GuardError, ServingGuard
from kubesalvo.sched.extender.service import Extender
from kubesalvo.sched.serving import reload
from tests.helpers.extender import config, node, pod, post
from tests.helpers.tls import Authority, Pair, authority, leaf
from tests.sched.serving.test_reload import presented

BIND = {"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "n1"}
PREEMPT = {"Pod": pod(), "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "v1"}]}}}
FILTER = {"Pod": pod(), "Nodes": {"items": [node("n1")]}}


class Certificates:
    def __init__(self, folder: Path) -> None:
        self.ca: Authority = authority(folder, "ca")
        self.server: Pair = leaf(folder, self.ca, "extender", server=True)
        self.client: Pair = leaf(folder, self.ca, "kube-scheduler", server=False)
        self.rogue: Pair = leaf(folder, authority(folder, "rogue-ca"), "rogue", server=False)

    def guard(self) -> ServingGuard:
        return ServingGuard(str(self.server.cert), str(self.server.key), str(self.ca.cert))

    def client_context(self, pair: Pair | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        if pair is not None:
            context.load_cert_chain(pair.cert, pair.key)
        return context


async def call(url: str, verb: str, body: object, context: ssl.SSLContext) -> tuple[int, object]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/{verb}", data=msgspec.json.encode(body), ssl=context) as response,
    ):
        return response.status, msgspec.json.decode(await response.read())


@pytest.fixture
async def https_extender(tmp_path):
    certs = Certificates(tmp_path)
    extender = Extender(config([{"name": "example"}]), None, "127.0.0.1", 0, certs.guard())
    await extender.start()
    try:
        yield extender, certs
    finally:
        await extender.shutdown()


async def test_bind_and_preempt_without_a_client_certificate_get_403(https_extender):
    extender, certs = https_extender
    assert extender.url.startswith("https://")
    anonymous = certs.client_context(None)
    for verb, body in (("bind", BIND), ("preempt", PREEMPT), ("example/bind", BIND)):
        status, answer = await call(extender.url, verb, body, anonymous)
        assert status == 403, verb
        assert "client certificate" in answer["error"]
    # Reading verbs and health stay open to callers without one (probes, Prometheus).
    status, answer = await call(extender.url, "filter", FILTER, anonymous)
    assert status == 200 and "Error" not in answer
    text = 'kubesalvo_extender_requests_total{agent="all",code="403",verb="bind"} 1.0'
    assert text in extender.metrics.render().decode()


async def test_the_ca_signed_client_certificate_may_bind_and_preempt(https_extender):
    extender, certs = https_extender
    signed = certs.client_context(certs.client)
    status, answer = await call(extender.url, "bind", BIND, signed)
    # Past the guard: this extender has no API server, which the answer says.
    assert status == 200 and "no API server credentials" in answer["Error"]
    status, _ = await call(extender.url, "preempt", PREEMPT, signed)
    assert status == 200


async def test_a_client_certificate_of_another_ca_fails_the_handshake(https_extender):
    extender, certs = https_extender
    with pytest.raises(aiohttp.ClientError):
        await call(extender.url, "bind", BIND, certs.client_context(certs.rogue))


async def test_plain_http_on_loopback_serves_every_verb_without_a_certificate():
    extender = Extender(config([{"name": "example"}]), None, "127.0.0.1", 0, ServingGuard())
    await extender.start()
    try:
        assert extender.url.startswith("http://")
        status, answer = await post(extender.url, "bind", BIND)
    finally:
        await extender.shutdown()
    assert status == 200 and "no API server credentials" in answer["Error"]


@pytest.mark.parametrize(
    ("guard", "host", "said"),
    [
        (ServingGuard(), "0.0.0.0", "is not a loopback address"),
        (ServingGuard("c.crt", "c.key"), "10.0.0.5", "is not a loopback address"),
        (ServingGuard(client_ca_file="ca.crt"), "127.0.0.1", "--client-ca-file needs HTTPS"),
        (ServingGuard(tls_cert_file="c.crt"), "127.0.0.1", "go together"),
    ],
)
def test_flags_that_leave_bind_open_or_do_not_fit_are_refused(guard, host, said):
    with pytest.raises(GuardError, match=said):
        guard.check(host)


def test_loopback_and_a_client_ca_beyond_it_are_accepted():
    ServingGuard().check("127.0.0.1")
    ServingGuard().check("::1")
    ServingGuard("c.crt", "c.key", "ca.crt").check("0.0.0.0")


def test_the_default_body_limit_is_small():
    assert config([{"name": "example"}]).max_request_bytes == DEFAULT_MAX_REQUEST_BYTES
    assert DEFAULT_MAX_REQUEST_BYTES <= 4 * 1024 * 1024


def extender_command(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.pop("KUBECONFIG", None)
    env["HOME"] = str(home)  # no credentials anywhere: it runs without an API server
    return subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "extender", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_a_busy_listen_port_is_one_line_and_exit_1(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = extender_command(f"--listen=127.0.0.1:{port}", home=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"kubesalvo extender: cannot serve on 127.0.0.1:{port}: " in done.stderr
    assert "in use" in done.stderr


def test_listening_beyond_loopback_without_a_client_ca_exits_2(tmp_path):
    done = extender_command("--listen=0.0.0.0:0", home=tmp_path)
    assert done.returncode == 2
    assert "is not a loopback address" in done.stderr and "Traceback" not in done.stderr


async def test_a_rotated_serving_certificate_is_presented_without_a_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(reload, "RELOAD_INTERVAL_SECONDS", 0.05)
    certs = Certificates(tmp_path)
    second = leaf(tmp_path, certs.ca, "extender-rotated", server=True)
    extender = Extender(config([{"name": "example"}]), None, "127.0.0.1", 0, certs.guard())
    await extender.start()
    try:
        port = int(extender.url.rsplit(":", 1)[1])
        assert await presented(port, str(certs.ca.cert)) == "extender"
        shutil.copy(second.key, certs.server.key)
        shutil.copy(second.cert, certs.server.cert)
        for _ in range(400):
            if await presented(port, str(certs.ca.cert)) == "extender-rotated":
                break
            await asyncio.sleep(0.05)
        assert await presented(port, str(certs.ca.cert)) == "extender-rotated"
    finally:
        await extender.shutdown()
