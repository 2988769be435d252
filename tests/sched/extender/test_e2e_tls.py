"""The real kube-scheduler calling ``kubesalvo extender`` over HTTPS, as its extender
configuration can: ``enableHTTPS: true`` with ``tlsConfig`` (caFile to verify the
extender, certFile/keyFile for its client certificate). With the certificate the
extender's CA signed, kube-scheduler's bind goes through the extender; without one the
extender refuses /bind (403) and the pod stays unbound."""

from __future__ import annotations

import ssl
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from kubesalvo.sched.cluster import processes
from tests.helpers.tls import authority, leaf
from tests.sched.extender.test_e2e import (
    burst_pool,
    extender_entry,
    kube_scheduler,
    make_pod,
    placements,
    pool,
)
from tests.sched.test_app import list_objects

pytestmark = pytest.mark.integration
__all__ = ["pool"]  # the fixture, used by name

BIND_200 = 'kubesalvo_extender_requests_total{agent="all",code="200",verb="bind"}'
BIND_403 = 'kubesalvo_extender_requests_total{agent="all",code="403",verb="bind"}'


def https_metric(url: str, context: ssl.SSLContext, needle: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5, context=context) as answer:
        text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(needle)
    )


@contextmanager
def https_extender(control_plane, tmp_path: Path) -> Iterator[tuple[str, ssl.SSLContext, dict]]:
    """``kubesalvo extender`` over HTTPS requiring client certificates for /bind; yields its
    URL, a context trusting it, and the tlsConfig kube-scheduler needs to call it."""
    pki = tmp_path / "pki"
    ca = authority(pki, "extender-ca")
    server = leaf(pki, ca, "extender", server=True)
    client = leaf(pki, ca, "kube-scheduler", server=False)
    config = tmp_path / "extender.yaml"
    config.write_text(yaml.safe_dump({"agents": [{"name": "congestion"}]}))
    (port,) = processes.free_ports(1)
    log = tmp_path / "extender.log"
    argv = [
        sys.executable, "-m", "kubesalvo.sched.cli", "extender", f"--config={config}",
        f"--kubeconfig={control_plane.kubeconfig}", f"--listen=127.0.0.1:{port}",
        f"--tls-cert-file={server.cert}", f"--tls-private-key-file={server.key}",
        f"--client-ca-file={ca.cert}",
    ]  # fmt: skip
    pid = processes.start(argv, log, die_with_parent=True)
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(ca.cert))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2, context=trust) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or not processes.is_running(pid):
                pytest.fail("extender not ready:\n" + processes.log_tail(log, 40))
            time.sleep(0.2)
        tls = {"caFile": str(ca.cert), "certFile": str(client.cert), "keyFile": str(client.key)}
        yield url, trust, tls
    finally:
        processes.stop([pid], grace=10)


def test_kube_scheduler_binds_through_the_extender_with_its_client_certificate(
    control_plane, namespace, pool, tmp_path
):
    burst_pool(control_plane, pool)
    name = f"tls-{pool}"
    with https_extender(control_plane, tmp_path) as (url, trust, tls):
        entry = extender_entry(url, cache=True, bind=True, enableHTTPS=True, tlsConfig=tls)
        with kube_scheduler(control_plane, name, [entry]):
            control_plane.create([make_pod(namespace, "signed", name, pool)])
            placements(control_plane, namespace, ["signed"])
            assert https_metric(url, trust, BIND_200) == 1


def test_without_a_client_certificate_kube_schedulers_bind_is_refused(
    control_plane, namespace, pool, tmp_path
):
    burst_pool(control_plane, pool)
    name = f"notls-{pool}"
    with https_extender(control_plane, tmp_path) as (url, trust, tls):
        ca_only = {"caFile": tls["caFile"]}
        entry = extender_entry(url, cache=True, bind=True, enableHTTPS=True, tlsConfig=ca_only)
        with kube_scheduler(control_plane, name, [entry]):
            control_plane.create([make_pod(namespace, "anonymous", name, pool)])
            deadline = time.monotonic() + 90
            while https_metric(url, trust, BIND_403) < 1:
                assert time.monotonic() < deadline, "kube-scheduler never called /bind"
                time.sleep(0.5)
            assert https_metric(url, trust, BIND_200) == 0
            (pod,) = [
                p
                for p in list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
                if p["metadata"]["name"] == "anonymous"
            ]
            assert not pod["spec"].get("nodeName")
