"""The bench's start figure means the same for both sides: a contender counts as started
when its /readyz answers 200, and for kube-scheduler and kubesalvo alike that answer
waits for the cluster to be listed and taken in (kube-scheduler's ``sched-handler-sync``
check; kubesalvo's check of that name, set once its state is built and its cycle runs).
Checked on the real control plane, each scheduler under a schedulerName of its own."""

from __future__ import annotations

import re
import ssl
import urllib.request
from pathlib import Path

import pytest

from kubesalvo.sched.cluster.api import ApiClient
from kubesalvo.sched.cluster.baseline import start_kube_scheduler
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.test_app import CONFIG, SchedulerProcess

pytestmark = pytest.mark.integration

NODES = 200


def _readyz_verbose(url: str) -> str:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving certificate
    with urllib.request.urlopen(f"{url}/readyz?verbose", timeout=10, context=insecure) as answer:
        return str(answer.read().decode())


def _node_count(control_plane: ControlPlane) -> int:
    async def count(client: ApiClient) -> int:
        listed = await client.request("GET", "/api/v1/nodes")
        return len(listed["items"])

    return int(control_plane.call(count))


def test_kube_scheduler_counts_as_started_only_with_its_informers_synced(
    control_plane: ControlPlane,
) -> None:
    control_plane.add_nodes(NODES)
    name = "start-figure-upstream"
    extra = {"profiles": [{"schedulerName": name}]}
    with start_kube_scheduler(control_plane, extra=extra, name=name, timeout=120) as upstream:
        text = _readyz_verbose(f"https://127.0.0.1:{upstream.port}")
    assert "[+]sched-handler-sync ok" in text


def test_kubesalvo_counts_as_started_only_with_every_node_in_its_state(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    control_plane.add_nodes(NODES)
    nodes = _node_count(control_plane)
    config = CONFIG.format(max_burst=100) + "profiles:\n  - schedulerName: start-figure-ours\n"
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "start")
    try:
        process.wait_ready(timeout=120)
        # The first 200 of /readyz: the state holds every node already.
        assert process.debug("/debug/queue")["cache"]["nodes"] == nodes
        status, body = process.get(f"http://127.0.0.1:{process.metrics_port}/readyz?verbose")
        log = process.log.read_text()
    finally:
        process.terminate()
    assert status == 200
    assert "[+]sched-handler-sync ok" in body.decode()
    # The start's split is logged: each initial list's wait, decode and handling.
    split = re.search(rf"nodes {nodes} listed (\S+)s decoded (\S+)s handled (\S+)s", log)
    assert split is not None, log[-2000:]
    # Each part took some time: so many nodes are not listed, decoded or taken in at once.
    assert all(float(seconds) > 0 for seconds in split.groups()), split.group(0)
