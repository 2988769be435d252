"""InterPodAffinityArgs: the hard pod affinity weight's range."""

import pytest

from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs


def test_hard_pod_affinity_weight_range():
    with pytest.raises(ProfileError, match=r"\[0, 100\]"):
        InterPodAffinityArgs(hard_pod_affinity_weight=101)
