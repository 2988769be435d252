"""ImageLocality in ``kubesalvo run`` on the real control plane, from the image reporter's
annotation alone.

The test's three kwok nodes report no ``status.images`` (kwok's never do); the image
reporter, fed by a fake crictl per node, writes each node's annotation through the API.
With ImageLocality the only score plugin (weight 1000, as such profiles are written), a
pod goes to the one node whose runtime holds its image, and ``kubesalvo explain`` shows
ImageLocality's part in that decision; once every node holds the image, the nodes tie
and each pod of a burst is drawn among the three, as kube-scheduler draws.

The image is 1 TiB: kube-scheduler's formula scales a size by the share of *all* nodes
that hold it, and the session's cluster holds other tests' nodes too, so only a huge
image keeps a clear edge (clamped at 1000Mi per container: a score of 100) whatever
their number.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.plugins.image_locality import ReportedImage
from kubesalvo.sched.client import ApiClient, load_credentials
from kubesalvo.sched.image_reporter.agent import ImageReporter, Outcome
from kubesalvo.sched.image_reporter.crictl import list_images
from tests.helpers.deploy import node_pool, pool_pod
from tests.sched.image_reporter.fake_crictl import FakeCrictl
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects, settled

pytestmark = pytest.mark.integration

WEIGHT = 1000
WINDOW = "burstGatheringWindow: 1s"
IMAGE = "registry.example.com/ml/trainer:7.3"
TRAINER = ReportedImage((IMAGE,), ("registry.example.com/ml/trainer@sha256:" + "7c" * 32,), 1 << 40)
PAUSE = ReportedImage(("registry.k8s.io/pause:3.10",), (), 320_368)
ONLY_IMAGE_LOCALITY = f"""\
profiles:
- schedulerName: kubesalvo
  plugins:
    score:
      disabled: [{{name: "*"}}]
      enabled: [{{name: ImageLocality, weight: {WEIGHT}}}]
"""


class Pool:
    """The test's nodes, each with a fake crictl, and the test's pods."""

    def __init__(self, control_plane: Any, namespace: str, folder: Path) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.pool = f"images-{secrets.token_hex(3)}"
        self.nodes = node_pool(control_plane, self.pool, 3, cpu="8")
        self.crictl = {node: FakeCrictl(folder / node) for node in self.nodes}
        self.pods: list[dict[str, Any]] = []

    def report(self, holding: set[str]) -> None:
        """Each node's runtime holds pause, and the trainer image on ``holding``; the
        reporter writes every node's annotation."""
        credentials = load_credentials(str(self.control_plane.kubeconfig))

        async def write_all() -> list[Outcome]:
            outcomes = []
            async with ApiClient(credentials) as client:
                for node, crictl in self.crictl.items():
                    crictl.serve([TRAINER, PAUSE] if node in holding else [PAUSE])
                    reporter = ImageReporter(
                        client, node, lambda c=crictl: list_images(str(c.path))
                    )
                    outcomes.append(await reporter.step())
            return outcomes

        assert asyncio.run(write_all()) == [Outcome.WRITTEN] * len(self.nodes)

    def create(self, *names: str) -> None:
        """The pods, created at once (one burst, within the gathering window)."""
        made = [pool_pod(self.namespace, name, self.pool) for name in names]
        for pod in made:
            pod["spec"]["containers"][0]["image"] = IMAGE
        self.pods += made
        self.control_plane.create(made)

    def placed(self) -> dict[str, str]:
        listed = list_objects(self.control_plane, f"/api/v1/namespaces/{self.namespace}/pods")
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in listed}

    def delete(self) -> None:
        delete_pods(self.control_plane, self.pods)

        async def cleanup(client: Any) -> None:
            for node in self.nodes:
                await client.request("DELETE", f"/api/v1/nodes/{node}")

        self.control_plane.call(cleanup)


@pytest.fixture
def pool(control_plane: Any, namespace: str, tmp_path: Path) -> Iterator[Pool]:
    made = Pool(control_plane, namespace, tmp_path / "nodes")
    try:
        yield made
    finally:
        made.delete()


def explain(process: SchedulerProcess, pod: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable, "-m", "kubesalvo.sched.cli", "explain", pod,
            "--debug-url", f"http://127.0.0.1:{process.debug_port}",
            "--debug-token-file", str(process.debug_token_file), "-o", "json",
        ],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_a_pod_goes_where_the_reporter_saw_its_image_and_spreads_when_all_have_it(
    control_plane: Any, pool: Pool, tmp_path: Path
) -> None:
    holder = pool.nodes[1]
    pool.report({holder})
    # Equal scores: each pod is drawn among the tied nodes (tests/sched/test_run_ties.py
    # compares the draws with kube-scheduler's); a window wide enough takes the twelve
    # replicas in one burst.
    config = CONFIG.format(max_burst=100).replace("burstGatheringWindow: 20ms", WINDOW)
    assert WINDOW in config
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config + ONLY_IMAGE_LOCALITY)
    try:
        process.wait_ready()
        pool.create("trainer")
        settled(process, 120, lambda: bool(pool.placed().get("trainer")))
        assert pool.placed()["trainer"] == holder

        answer = explain(process, f"{pool.namespace}/trainer")
        assert answer["status"] == "placed" and answer["node"] == holder
        scores = {e["node"]: e["plugins"] for e in answer["topNodes"]}
        assert scores[holder] == {"ImageLocality": 100 * WEIGHT}
        for other in pool.nodes:
            if other != holder:
                assert scores[other] == {"ImageLocality": 0}
        text = subprocess.run(
            [
                sys.executable, "-m", "kubesalvo.sched.cli", "explain",
                f"{pool.namespace}/trainer", "--debug-url",
                f"http://127.0.0.1:{process.debug_port}",
                "--debug-token-file", str(process.debug_token_file),
            ],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        assert "ImageLocality" in text and str(100 * WEIGHT) in text

        pool.report(set(pool.nodes))

        def everywhere() -> bool:
            answer = explain(process, f"{pool.namespace}/trainer")
            return all(e["plugins"] == {"ImageLocality": 100 * WEIGHT} for e in answer["topNodes"])

        settled(process, 60, everywhere)
        pool.create(*(f"replica-{i}" for i in range(12)))
        settled(process, 120, lambda: all(pool.placed().values()) and len(pool.placed()) == 13)
        placed = pool.placed()
        spread = Counter(node for name, node in placed.items() if name.startswith("replica-"))
        # all twelve on one node: probability 3 / 3**12 (1 in 177,147) of the draws
        assert set(spread) <= set(pool.nodes) and len(spread) >= 2, spread
        assert sum(spread.values()) == 12
    finally:
        process.kill()
