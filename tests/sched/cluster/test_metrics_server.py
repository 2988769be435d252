"""metrics-server: its build (its own Go module and cache folder keyed by version) and
metrics.k8s.io served through the aggregation layer from what kwok emulates."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import time

import pytest

from kubesalvo.core.quantity import milli_value, value
from kubesalvo.sched.cluster import ApiError, build, controlplane, metrics_server, nodes


def test_the_module_pins_a_release_and_the_cache_folder_is_keyed_by_it(tmp_path):
    version = metrics_server.version()
    assert version.startswith("v0.")
    path = metrics_server.binary(tmp_path)
    assert path == tmp_path / "bin" / f"metrics-server-{version}" / "metrics-server"
    # Never the control plane's folder.
    assert path.parent != build.bin_dir(root=tmp_path)


@pytest.mark.slow
def test_the_build_gives_a_working_binary():
    if shutil.which("go") is None and not metrics_server.binary().is_file():
        pytest.skip("metrics-server is not built and `go` is not on PATH to build it")
    binary = metrics_server.build()
    done = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    assert "--kubelet-preferred-address-types" in done.stdout + done.stderr


def built_metrics_server():
    """metrics-server's binary, built if Go is there (a CI run without it fails)."""
    if metrics_server.binary().is_file():
        return metrics_server.binary()
    if shutil.which("go") is None:
        reason = "metrics-server is not built and `go` is not on PATH to build it"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return metrics_server.build()


def test_a_node_gets_the_metrics_path_and_an_address_unless_it_has_them():
    bare = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready"}]}}
    node = nodes.scrapeable(bare)
    assert node["metadata"]["annotations"] == {
        nodes.METRICS_PATH_ANNOTATION: "/metrics/nodes/n1/metrics/resource"
    }
    assert node["status"]["addresses"] == [
        {"type": "InternalIP", "address": "127.0.0.1"},
        {"type": "Hostname", "address": "n1"},
    ]
    assert node["status"]["conditions"] == [{"type": "Ready"}]
    assert "addresses" not in bare["status"]  # the input is not changed
    own = {
        "metadata": {"name": "n2", "annotations": {nodes.METRICS_PATH_ANNOTATION: "/m"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]},
    }
    assert nodes.scrapeable(own) == own


def _metrics_node(name: str, pool: str, ready: bool = False) -> dict:
    """A fake node; ``ready`` ones are created with their Ready condition set (as a bench
    fleet's and a snapshot's are), so kwok's initialize stage gives them no address."""
    conditions = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubesalvo.io/test-pool": pool},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            **({"conditions": conditions} if ready else {}),
        },
    }


@pytest.mark.integration
def test_pods_usage_set_by_annotation_is_served_by_metrics_k8s_io(control_plane, namespace):
    """kwok emulates each node's kubelet resource metrics from the pods' usage
    annotations; metrics-server scrapes them and serves metrics.k8s.io through the
    aggregation layer, as a HorizontalPodAutoscaler reads it."""
    binary = built_metrics_server()
    pool = f"metrics-{secrets.token_hex(3)}"
    names = [f"{pool}-{i}" for i in range(2)]
    control_plane.call(
        lambda c: nodes.add_nodes(
            c, [_metrics_node(n, pool, ready=n == names[0]) for n in names], 120
        )
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "busy",
            "namespace": namespace,
            "annotations": {
                "kwok.x-k8s.io/usage-cpu": "250m",
                "kwok.x-k8s.io/usage-memory": "100Mi",
            },
        },
        "spec": {
            "nodeName": names[0],
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    control_plane.create([pod])
    selector = f"kubesalvo.io/test-pool={pool}"
    try:
        asyncio.run(
            controlplane.start_metrics_server(
                control_plane, binary, timeout=120, die_with_parent=True, node_selector=selector
            )
        )
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/busy"
        deadline = time.monotonic() + 90
        usage = None
        while time.monotonic() < deadline:  # a rate needs two scrapes (10 s apart)
            try:
                found = control_plane.call(lambda c: c.request("GET", path))
                usage = found["containers"][0]["usage"]
                break
            except ApiError as error:
                assert error.status in (404, 503), error
                time.sleep(2)
        assert usage is not None, "no metrics for the pod within 90 s"
        assert milli_value(usage["cpu"]) == pytest.approx(250, abs=25)  # millicores
        assert value(usage["memory"]) == 100 * 2**20
        listed = control_plane.call(
            lambda c: c.request(
                "GET", "/apis/metrics.k8s.io/v1beta1/nodes", params={"labelSelector": selector}
            )
        )
        by_node = {item["metadata"]["name"]: item["usage"] for item in listed["items"]}
        assert set(by_node) == set(names)
        # The node uses what its pod uses on top of the empty node's base.
        busy, idle = (value(by_node[n]["memory"]) for n in names)
        assert busy - idle == 100 * 2**20
    finally:
        asyncio.run(controlplane.stop_metrics_server(control_plane))
        # The pod goes before its node (checks of other tests count pods on missing nodes).
        gone = f"/api/v1/namespaces/{namespace}/pods/busy"
        control_plane.call(lambda c: c.request("DELETE", gone, {"gracePeriodSeconds": 0}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                control_plane.call(lambda c: c.request("GET", gone))
            except ApiError:
                break
            time.sleep(0.5)
        control_plane.call(
            lambda c: asyncio.gather(*(c.request("DELETE", f"/api/v1/nodes/{n}") for n in names))
        )
