"""kubesalvo decides as the control plane's kube-scheduler release does by default: on
v1.37 its capacity score is on, as upstream's StorageCapacityScoring gate is there, and
DynamicResources scores with weight 2, as v1.37's default profile has it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kubesalvo.sched.bench.contenders import kubesalvo_config, release_flags


@pytest.mark.parametrize(
    ("release", "flags"),
    [
        ("v1.34.4", []),
        ("v1.37.2", ["--feature-gates=StorageCapacityScoring=true"]),
    ],
)
def test_kubesalvo_gets_the_releases_default_gates(release: str, flags: list[str]) -> None:
    cp = cast(Any, SimpleNamespace(kubernetes=release))
    assert release_flags(cp) == flags


def test_on_v1_37_kubesalvos_profile_scores_dynamic_resources_as_upstream() -> None:
    old = cast(Any, SimpleNamespace(kubernetes="v1.34.4", kubeconfig="k"))
    new = cast(Any, SimpleNamespace(kubernetes="v1.37.2", kubeconfig="k"))
    assert kubesalvo_config(old, 5000, 10000)["profiles"] == [{"schedulerName": "kubesalvo"}]
    (profile,) = kubesalvo_config(new, 5000, 10000)["profiles"]
    assert profile["plugins"]["score"]["enabled"] == [{"name": "DynamicResources", "weight": 2}]
