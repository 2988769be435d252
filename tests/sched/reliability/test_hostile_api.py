"""Hostile API objects through the real API server and ``kubesalvo run``, and secrets.

Objects the API server accepts that a scheduler must survive: requests of 1e400 and 1e19
(beyond int64), a pod with 2,000 labels, one with 10,000 tolerations, unknown fields
(dropped by the server), missing optional fields, a node with zero allocatable and one
with 1e400 of memory. Each hostile pod gets an answer (bound, or PodScheduled=False with
Unschedulable or SchedulerError), the ordinary pods created with them are all bound, and
the scheduler's log holds no traceback. What the server refuses (invalid selectors, -1)
never reaches the watch; the decoding layer is fuzzed directly for those.

The same run checks secrets: the token the scheduler used (and a wrong one it was given)
appears nowhere in its log, the events it wrote, ``kubesalvo explain``'s output or its
debug and metrics pages, and no Authorization header or Bearer text does either.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.watch import NODES, PODS, Decoders
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects, pod_scheduled

PODS_DECODERS = Decoders(PODS)
NODES_DECODERS = Decoders(NODES)


def pod(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    requests = spec.pop("requests", {"cpu": "10m"})
    labels = spec.pop("labels", {"app": "hostile"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "schedulerName": "kubesalvo",
            "nodeSelector": {"kubesalvo.io/test-pool": namespace},
            "tolerations": [{"key": "kubesalvo.io/test-pool", "operator": "Exists"}],
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"requests": requests}}
            ],
            **spec,
        },
    }  # fmt: skip


def node(name: str, pool: str, allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubesalvo.io/test-pool": pool},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"taints": [{"key": "kubesalvo.io/test-pool", "effect": "NoSchedule"}]},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def hostile_pods(namespace: str) -> list[dict[str, Any]]:
    many_labels = {f"k{i}.example.com/label-{i}": f"v{i}" for i in range(2000)}
    tolerations = [
        {"key": f"t{i}", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
        for i in range(10_000)
    ] + [{"key": "kubesalvo.io/test-pool", "operator": "Exists"}]
    unknown = pod(namespace, "unknown-fields")
    unknown["spec"]["someFutureField"] = {"a": 1}
    unknown["metadata"]["futureMeta"] = "x"
    bare = pod(namespace, "bare")
    del bare["spec"]["containers"][0]["resources"]
    return [
        pod(namespace, "huge-memory", requests={"memory": "1e400"}),
        pod(namespace, "huge-cpu", requests={"cpu": "1e19"}),
        pod(namespace, "saturated", requests={"memory": "99999999999999999999999Ei"}),
        pod(namespace, "many-labels", labels=many_labels),
        pod(namespace, "many-tolerations", tolerations=tolerations),
        unknown,
        bare,
    ]


def answered(listed: dict[str, dict[str, Any]], name: str) -> bool:
    p = listed.get(name)
    if p is None:
        return False
    condition = pod_scheduled(p) or {}
    return bool(p["spec"].get("nodeName")) or (
        condition.get("status") == "False"
        and condition.get("reason") in ("Unschedulable", "SchedulerError")
    )


def fetch(url: str, token: str | None = None) -> bytes:
    """The body of a page, error pages (404) included: they are output too."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        return error.read()


@pytest.mark.integration
def test_hostile_objects_get_answers_others_are_bound_and_no_secret_is_written(
    control_plane, namespace, tmp_path
):
    pool = namespace
    nodes = [
        node(f"{pool}-a", pool, {"cpu": "8", "memory": "32Gi", "pods": "110"}),
        node(f"{pool}-zero", pool, {"cpu": "0", "memory": "0", "pods": "0"}),
        node(f"{pool}-huge", pool, {"cpu": "8", "memory": "1e400", "pods": "110"}),
    ]
    control_plane.create(nodes)
    wrong = f"wrong-{secrets.token_hex(16)}"
    bad_kubeconfig = tmp_path / "bad-kubeconfig"
    bad_kubeconfig.write_text(
        control_plane.kubeconfig.read_text().replace(control_plane.token, wrong)
    )
    config = CONFIG.format(max_burst=1000)
    refused = SchedulerProcess(tmp_path, bad_kubeconfig, config, "refused")
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "run")
    hostile = hostile_pods(namespace)
    ordinary = [pod(namespace, f"ordinary-{i}") for i in range(20)]
    try:
        process.wait_ready()
        control_plane.create(hostile + ordinary)
        names = [p["metadata"]["name"] for p in hostile + ordinary]
        deadline = time.monotonic() + 120
        while True:
            listed = {
                p["metadata"]["name"]: p
                for p in list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
            }
            if all(answered(listed, n) for n in names):
                break
            assert time.monotonic() < deadline, (
                [n for n in names if not answered(listed, n)],
                process.tail(),
            )
            time.sleep(1.0)
        assert all(listed[f"ordinary-{i}"]["spec"].get("nodeName") for i in range(20))
        for name in ("huge-memory", "huge-cpu"):
            condition = pod_scheduled(listed[name])
            assert condition["reason"] == "SchedulerError", condition
            assert condition["message"].startswith("NodeResourcesFit: "), condition
        assert process.process.poll() is None

        # Everything the scheduler wrote or serves, for the secrets check.
        explain = subprocess.run(
            [sys.executable, "-m", "kubesalvo.sched.cli", "explain", f"{namespace}/huge-memory",
             "--debug-url", f"http://127.0.0.1:{process.debug_port}",
             "--debug-token-file", str(process.debug_token_file)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        pages = [
            fetch(f"http://127.0.0.1:{process.debug_port}{path}", process.debug_token)
            for path in ("/", "/debug/queue", f"/debug/explain?pod={namespace}/ordinary-0",
                         f"/debug/explain?pod={namespace}/huge-memory")
        ] + [fetch(f"http://127.0.0.1:{process.metrics_port}/metrics")]  # fmt: skip
        events = list_objects(
            control_plane, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        )
        time.sleep(3)  # the refused replica has retried its list a few times by now
    finally:
        process.kill()
        refused.kill()
        delete_pods(control_plane, hostile + ordinary)
        for n in nodes:
            name = n["metadata"]["name"]
            control_plane.call(lambda c, name=name: c.request("DELETE", f"/api/v1/nodes/{name}"))
    log = process.log.read_text(errors="replace")
    assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:3000]
    written = {
        "log": log,
        "refused log": refused.log.read_text(errors="replace"),
        "explain": explain.stdout + explain.stderr,
        "pages": b"\n".join(pages).decode(errors="replace"),
        "events": json.dumps(events),
    }
    assert "401" in written["refused log"] or "Unauthorized" in written["refused log"]
    for where, text in written.items():
        for secret in (control_plane.token, wrong, "Authorization", "Bearer ", "PRIVATE KEY"):
            assert secret not in text, f"{secret[:12]}... appears in the {where}"


# --- the decoding layer, directly -----------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = st.sampled_from(
    ["metadata", "spec", "status", "labels", "containers", "tolerations", "affinity",
     "nodeSelector", "resources", "requests", "allocatable", "taints", "name", "uid",
     "topologySpreadConstraints", "ownerReferences", "priority", "nodeName"]
)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(FIELDS, JSON_VALUES, max_size=4),
    st.sampled_from([PODS_DECODERS, NODES_DECODERS]),
)
def test_the_watch_decoder_turns_any_json_into_an_object_or_a_decode_error(body, decoders):
    """What the watch does with an object it cannot type is a DecodeError (it backs off and
    resumes); anything it decodes converts to the dict the core reads."""
    raw = msgspec.json.encode({"type": "ADDED", "object": body})
    try:
        obj = decoders.object.decode(msgspec.json.encode(body))
    except msgspec.DecodeError:
        return
    assert isinstance(to_api_dict(obj), dict)
    assert raw
