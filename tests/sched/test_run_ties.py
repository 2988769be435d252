"""Ties between equally scored nodes in ``kubesalvo run`` and in upstream kube-scheduler,
on one real control plane (issue 30).

kube-scheduler's selectHost draws the node at random among the nodes sharing the best
total score. Two profiles whose scores tie on every node, each run by both schedulers:
ImageLocality alone (weight 1000, as such profiles are written; kube-scheduler accepts
any weight up to 2**31 - 1) on three nodes that all hold the pod's image, and every score
plugin disabled. Nine pods are created one after another, each waited until bound (so
each is a burst of its own): each scheduler uses at least two of the three nodes (all
nine on one node has probability 3 / 3**9 per scheduler). With the image on one node of
three, both put every pod there. ``/debug/explain`` says among how many nodes kubesalvo
drew, and ``kubesalvo run --seed`` replays the same draws in a second run.

kwok nodes keep the ``status.images`` they are created with; the image is 1 TiB so that
ImageLocality's score is its maximum whatever share of the cluster's nodes hold it.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubesalvo.sched.cluster import start_kube_scheduler
from kubesalvo.sched.cluster.nodes import add_nodes
from tests.helpers.deploy import get_pod, pool_pod
from tests.sched.cycle.test_burst import own_node
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods

pytestmark = pytest.mark.integration

IMAGE = "registry.example.com/ml/trainer:7.3"
TIB = 1 << 40
PODS = 9
# profile name -> its plugins (the same for both schedulers)
PROFILES: dict[str, dict[str, Any]] = {
    "image": {
        "score": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "ImageLocality", "weight": 1000}],
        }
    },
    "no-score": {"score": {"disabled": [{"name": "*"}]}},
}


def profiles_yaml(prefix: str) -> str:
    return yaml.safe_dump(
        {
            "profiles": [
                {"schedulerName": f"{prefix}-{name}", "plugins": plugins}
                for name, plugins in PROFILES.items()
            ]
        }
    )


class Pools:
    """Two pools of three kwok nodes: the image on every node of ``everywhere``, on the
    first node of ``one`` only."""

    def __init__(self, control_plane: Any) -> None:
        self.control_plane = control_plane
        tag = secrets.token_hex(3)
        self.everywhere = f"ties-all-{tag}"
        self.one = f"ties-one-{tag}"
        self.nodes: dict[str, list[str]] = {}
        made = []
        for pool in (self.everywhere, self.one):
            names = []
            for i in range(3):
                node = own_node(f"{pool}-{i}", pool, "8")
                if pool == self.everywhere or i == 0:
                    node["status"]["images"] = [{"names": [IMAGE], "sizeBytes": TIB}]
                made.append(node)
                names.append(node["metadata"]["name"])
            self.nodes[pool] = names
        control_plane.call(lambda client: add_nodes(client, made, 120.0))
        for node in made:  # kwok keeps the images the nodes were created with
            name = node["metadata"]["name"]
            if node["status"].get("images"):
                stored = self._node(name)
                assert IMAGE in stored["status"]["images"][0]["names"], name

    def _node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self.control_plane.call(
            lambda client: client.request("GET", f"/api/v1/nodes/{name}")
        )
        return node

    def delete(self) -> None:
        async def cleanup(client: Any) -> None:
            for names in self.nodes.values():
                for name in names:
                    await client.request("DELETE", f"/api/v1/nodes/{name}")

        self.control_plane.call(cleanup)


@pytest.fixture
def pools(control_plane: Any) -> Iterator[Pools]:
    made = Pools(control_plane)
    try:
        yield made
    finally:
        made.delete()


def place_one_by_one(
    control_plane: Any,
    namespace: str,
    pool: str,
    scheduler: str,
    made: list[dict[str, Any]],
    suffix: str = "",
) -> list[str]:
    """Nine pods for ``scheduler`` on ``pool``'s nodes, each created once the one before
    is bound; their nodes."""
    nodes = []
    for i in range(PODS):
        pod = pool_pod(namespace, f"{scheduler}-{pool}-{i}{suffix}", pool)
        pod["spec"]["schedulerName"] = scheduler
        pod["spec"]["containers"][0]["image"] = IMAGE
        made.append(pod)
        control_plane.create([pod])
        deadline = time.monotonic() + 60
        while True:
            found = get_pod(control_plane, namespace, pod["metadata"]["name"])
            node = ((found or {}).get("spec") or {}).get("nodeName")
            if node:
                nodes.append(node)
                break
            assert time.monotonic() < deadline, f"{pod['metadata']['name']} not bound"
            time.sleep(0.2)
    return nodes


def test_tied_nodes_share_the_pods_with_kubesalvo_as_with_kube_scheduler(
    control_plane: Any, namespace: str, pools: Pools, tmp_path: Any
) -> None:
    upstream_prefix = f"upstream-{secrets.token_hex(3)}"
    upstream = start_kube_scheduler(
        control_plane,
        extra={
            "profiles": [
                {"schedulerName": f"{upstream_prefix}-{name}", "plugins": plugins}
                for name, plugins in PROFILES.items()
            ]
        },
        name=upstream_prefix,
    )
    config = CONFIG.format(max_burst=100) + profiles_yaml("kubesalvo")
    seed = ("--seed", "42")
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "ties", seed)
    made: list[dict[str, Any]] = []
    try:
        process.wait_ready()
        placed: dict[tuple[str, str, str], list[str]] = {}
        for prefix in ("kubesalvo", upstream_prefix):
            for profile, pool in (
                ("image", pools.everywhere),
                ("no-score", pools.everywhere),
                ("image", pools.one),
            ):
                scheduler = f"{prefix}-{profile}"
                nodes = place_one_by_one(control_plane, namespace, pool, scheduler, made)
                placed[(prefix, profile, pool)] = nodes
        for prefix in ("kubesalvo", upstream_prefix):
            for profile in ("image", "no-score"):
                nodes = placed[(prefix, profile, pools.everywhere)]
                assert set(nodes) <= set(pools.nodes[pools.everywhere])
                assert len(set(nodes)) >= 2, (prefix, profile, nodes)
            holder = pools.nodes[pools.one][0]
            assert placed[(prefix, "image", pools.one)] == [holder] * PODS, prefix

        # kubesalvo's last attempt of a pod says among how many nodes it drew.
        def tied(name: str) -> int:
            answer = process.debug(f"/debug/explain?pod={namespace}/{name}")
            assert answer["status"] == "placed"
            count: int = answer["lastAttempt"]["tiedNodes"]
            return count

        assert tied(f"kubesalvo-image-{pools.everywhere}-0") == 3
        assert tied(f"kubesalvo-no-score-{pools.everywhere}-0") == 3
        assert tied(f"kubesalvo-image-{pools.one}-0") == 1
        assert "ties between equally scored nodes drawn with seed 42" in process.log.read_text()

        # Another run with the same seed draws the same nodes for the same pods, in order
        # (the stream only moves on a tie: the first nine pods of each run draw alike).
        process.kill()
        process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "again", seed)
        process.wait_ready()
        again = place_one_by_one(
            control_plane, namespace, pools.everywhere, "kubesalvo-image", made, "again"
        )
        assert again == placed[("kubesalvo", "image", pools.everywhere)]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, made)


def test_run_takes_a_seed_and_refuses_a_negative_one() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubesalvo.sched.cli", "run", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    shown = run("--help")
    assert shown.returncode == 0 and "--seed N" in shown.stdout
    refused = run("--seed", "-1")
    assert refused.returncode == 2
    assert "argument --seed: must be 0 or more, not -1" in refused.stderr
