"""DynamicResources' Score (kube-scheduler v1.37; v1.34 has none) next to upstream on a
v1.37.2 control plane: kube-scheduler's default profile scores it with weight 2, kubesalvo
when its profile names it at score with that weight.

Each side has two empty nodes alike but for their GPUs: a100s on the first, h100s on the
second (8 each). Six pods each get a claim from a template asking firstAvailable: an
h100, else any GPU. Both nodes can serve every pod (the first by the second subrequest),
so only the Score tells them apart: 8 points for the first subrequest against 7, 100
against 87 once normalised, x2: every pod on the h100 node, each claim's result named
"gpu/h100", on both sides. Without the Score the resource scores would spread them.
``kubesalvo explain`` shows that Score per node for a placed pod.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.helpers import devices as dra
from tests.sched.test_run_devices_upstream import SIDES, Setup, first_available

pytestmark = pytest.mark.integration

SCORED = """\
- schedulerName: kubesalvo
  plugins:
    score:
      enabled: [{name: DynamicResources, weight: 2}]
"""
PODS = 6


@pytest.fixture
def newest_namespace(newest_control_plane: ControlPlane) -> str:
    name = f"dra-score-{secrets.token_hex(3)}"
    newest_control_plane.create(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}]
    )
    return name


def test_first_available_claims_go_where_the_first_subrequest_fits_as_upstream_scores(
    newest_control_plane: ControlPlane, newest_namespace: str, tmp_path: Any
) -> None:
    assert newest_control_plane.kubernetes == "v1.37.2"
    s = Setup(newest_control_plane, newest_namespace, tmp_path, nodes=2, profile=SCORED)
    try:
        gpu = s.gpu()
        spec = dra.claim_spec(
            first_available(
                "gpu",
                dra.request("h100", gpu, selectors=[s.driver.model_is("h100")]),
                dra.request("any", gpu),
            )
        )
        newest_control_plane.create([dra.template(newest_namespace, "h100-first", spec)])
        for side in SIDES:
            for i in range(PODS):
                s.pod(side, f"w{i}", templates=["h100-first"])
        newest_control_plane.create(s.pods)
        s.wait(
            "every pod bound",
            lambda: all(p["spec"].get("nodeName") for p in s.listed().values()),
            state=lambda: {n: p["spec"].get("nodeName") for n, p in s.listed().items()},
        )
        pods, claims = s.listed(), s.claims()
        assert dra.check_allocations(pods.values(), claims, s.slices, s.node_objects()) == []
        for side in SIDES:
            h100_node = s.nodes[side][1]["metadata"]["name"]
            mine = [pods[f"w{i}-{side}"] for i in range(PODS)]
            assert [p["spec"]["nodeName"] for p in mine] == [h100_node] * PODS, side
            for pod in mine:
                (claim,) = dra.claims_of(pod, claims)
                results = claim["status"]["allocation"]["devices"]["results"]
                assert [r["request"] for r in results] == ["gpu/h100"], side
        # kubesalvo explain: the Score per node is the one the kernel added (pod left out,
        # 3 H100s are free again on its node: 8 points against 7, 100 and 87, x2).
        a100_node, h100_node = (n["metadata"]["name"] for n in s.nodes["ours"])
        answer = s.process.debug(f"/debug/explain?pod={newest_namespace}/w0-ours")
        assert answer["status"] == "placed" and answer["node"] == h100_node
        device_scores = {e["node"]: e["plugins"]["DynamicResources"] for e in answer["topNodes"]}
        assert device_scores == {h100_node: 200, a100_node: 174}
    finally:
        s.close()
