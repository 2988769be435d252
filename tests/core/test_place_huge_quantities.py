"""place_burst with requests the API server stores but no int64 holds ("1e400", "1e19").

kube-apiserver accepts any non-negative quantity (it stores "1e400" as "10e399"), so the
watch can deliver such a pod. Its attempt fails with NodeResourcesFit's error; the other
pods of the same burst are placed as if it were not there.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.core.place import place_burst
from kubesalvo.core.state import ClusterState


def pod(name: str, **requests: str) -> dict[str, Any]:
    container = {"name": "c", "image": "app:1", "resources": {"requests": requests}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {"containers": [container]},
    }


@pytest.mark.parametrize(
    "requests",
    [
        {"memory": "10e399"},
        {"cpu": "1e19"},
        {"memory": "9e18", "cpu": "1"},
        {"example.com/x": "1e400"},
    ],
)
def test_a_request_beyond_int64_fails_its_pod_with_an_error_and_spares_the_burst(requests):
    state = ClusterState()
    state.add_node(
        {
            "metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    huge = pod("huge", **requests)
    if "memory" in requests and requests["memory"] == "9e18":
        # Two containers whose sum leaves int64 while each fits.
        huge["spec"]["containers"].append(huge["spec"]["containers"][0])
    burst = [pod("before", cpu="1"), huge, pod("after", cpu="1")]
    result = place_burst(state, burst)
    assert result.nodes[0] == "n0" and result.nodes[2] == "n0"
    assert result.nodes[1] is None
    assert result.errors[1].startswith("NodeResourcesFit: ")


def test_a_quantity_that_is_no_quantity_is_still_refused():
    state = ClusterState()
    with pytest.raises(ValueError):
        place_burst(state, [pod("bad", cpu="2x")])


def test_a_node_reporting_more_than_int64_holds_has_int64_max_and_takes_pods():
    state = ClusterState()
    state.add_node(
        {
            "metadata": {"name": "big", "labels": {"kubernetes.io/hostname": "big"}},
            "status": {"allocatable": {"cpu": "1e400", "memory": "10e399", "pods": "110"}},
        }
    )
    result = place_burst(state, [pod("p", cpu="1000", memory="1Pi")])
    assert result.nodes == ["big"]
