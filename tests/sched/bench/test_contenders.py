"""kubesalvo decides as the control plane's kube-scheduler release does by default: on
v1.37 its capacity score is on, as upstream's StorageCapacityScoring gate is there."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kubesalvo.sched.bench.contenders import release_flags


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
