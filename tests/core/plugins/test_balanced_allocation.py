"""NodeResourcesBalancedAllocationArgs: distinct resources, each of weight 1."""

import pytest

from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.framework import ProfileError, ResourceSpec


def test_balanced_allocation_weights_must_be_one():
    with pytest.raises(ProfileError, match="must be 1"):
        NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec("cpu", 2),))
