"""``/metrics/resources``: each pod's effective requests and limits under kube-scheduler's
families and labels; on the real control plane, kubesalvo's samples for a namespace of
pods equal upstream kube-scheduler's, both read through their secure ports."""

from __future__ import annotations

import secrets
import time
from fractions import Fraction
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.cluster import start_kube_scheduler
from kubesalvo.sched.serving.resources import pod_amounts, unit, value
from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, free_port
from tests.sched.test_metrics_upstream import upstream_metrics
from tests.sched.web.test_web_view_secure import get

READER = [{"nonResourceURLs": ["/metrics/resources"], "verbs": ["get"]}]


def container(name: str, requests: dict[str, str], limits: dict[str, str] | None = None, **more):
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources, **more}


def test_an_init_container_larger_than_the_sum_sets_the_request():
    pod = {
        "spec": {
            "containers": [container("a", {"cpu": "250m"}), container("b", {"cpu": "100m"})],
            "initContainers": [container("i", {"cpu": "2"})],
        }
    }
    assert pod_amounts(pod, "requests")["cpu"] == 2


def test_a_sidecar_adds_to_the_containers_and_to_later_init_containers():
    pod = {
        "spec": {
            "containers": [container("a", {"cpu": "1"})],
            "initContainers": [
                container("side", {"cpu": "500m"}, restartPolicy="Always"),
                container("i", {"cpu": "1200m"}),
            ],
        }
    }
    assert pod_amounts(pod, "requests")["cpu"] == Fraction(17, 10)


def test_overhead_adds_to_requests_and_only_to_limits_that_are_set():
    pod = {
        "spec": {
            "containers": [container("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2"})],
            "overhead": {"cpu": "100m", "memory": "10Mi"},
        }
    }
    assert pod_amounts(pod, "requests") == {"cpu": Fraction(11, 10), "memory": (1024 + 10) * 2**20}
    assert pod_amounts(pod, "limits") == {"cpu": Fraction(21, 10)}


def test_a_cpu_in_millicores_is_the_float_upstream_writes():
    assert value("cpu", Fraction(23, 10)) == 2300 * 0.001 == 2.3000000000000003
    assert value("cpu", Fraction(2)) == 2.0


def test_units_and_values_follow_the_resource():
    assert (unit("cpu"), unit("memory"), unit("hugepages-2Mi"), unit("example.com/gpu")) == (
        "cores",
        "bytes",
        "bytes",
        "",
    )
    assert value("cpu", Fraction(10001, 10000)) == 10001 * 10.0**-4
    assert value("memory", Fraction(2**20)) == 2.0**20


def samples(text: str, namespace: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("namespace") == namespace
    }


@pytest.mark.integration
def test_pod_resource_samples_equal_kube_schedulers(control_plane, namespace, tmp_path):
    reader = service_account_token(control_plane, namespace, "resources-reader")
    role = bind_rules(control_plane, namespace, "resources-reader", READER)
    upstream_name = f"upstream-{secrets.token_hex(3)}"
    upstream = start_kube_scheduler(
        control_plane, extra={"profiles": [{"schedulerName": upstream_name}]}, name=upstream_name
    )
    ours_name = f"kubesalvo-{secrets.token_hex(3)}"
    config = CONFIG.format(max_burst=100) + f"profiles:\n- schedulerName: {ours_name}\n"
    port = free_port()
    args = ("--secure-port", str(port), "--bind-address", "127.0.0.1")
    ours = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "resources", args)

    def pod(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": "nobody", **spec},
        }

    created = [
        pod("plain", containers=[container("c", {})]),
        pod(
            "mixed",
            containers=[
                container(
                    "a",
                    {
                        "cpu": "250m",
                        "memory": "64Mi",
                        "ephemeral-storage": "1Gi",
                        "example.com/gpu": "2",
                    },
                    {"cpu": "1", "memory": "128Mi", "example.com/gpu": "2"},
                ),
                container("b", {"cpu": "100m"}),
            ],
            initContainers=[
                container("side", {"cpu": "300m"}, {"memory": "1Gi"}, restartPolicy="Always"),
                container("i", {"cpu": "2", "memory": "1Mi"}),
            ],
        ),
        pod(
            "bound",
            nodeName="no-such-node",
            containers=[container("c", {"cpu": "1"}, {"cpu": "1"})],
        ),
        {**pod("defaulted"), "spec": {"containers": [container("c", {"memory": "1Gi"})]}},
    ]
    try:
        ours.wait_ready()
        control_plane.create(created)
        base = f"https://127.0.0.1:{port}/metrics/resources"

        def readings() -> tuple[set[Any], set[Any]]:
            status, body = get(base, reader)
            assert status == 200, body
            theirs = upstream_metrics(upstream.metrics_url + "/resources", reader)
            return samples(body.decode(), namespace), samples(theirs, namespace)

        deadline = time.monotonic() + 60
        while True:
            mine, theirs = readings()
            pods_seen = {dict(labels)["pod"] for _, labels, _ in mine}
            if mine == theirs and pods_seen == {"mixed", "bound", "defaulted"}:
                break
            assert time.monotonic() < deadline, (mine - theirs, theirs - mine)
            time.sleep(0.5)
        assert get(base)[0] == 403  # system:anonymous
    finally:
        ours.kill()
        upstream.stop()
        delete_pods(control_plane, created)
        delete_cluster_rbac(control_plane, role)
