"""NodeAffinityArgs: the added affinity's terms must parse."""

import pytest

from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.node_affinity import NodeAffinityArgs


def test_added_affinity_terms_must_parse():
    bad = {"key": "size", "operator": "Gt", "values": ["big"]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [bad]}]}
    with pytest.raises(ProfileError, match="requiredDuringScheduling") as err:
        NodeAffinityArgs({"requiredDuringSchedulingIgnoredDuringExecution": required})
    assert "nodeSelectorTerms[0]" in err.value.path
    preferred = [{"weight": 1, "preference": {"matchExpressions": [bad]}}]
    with pytest.raises(ProfileError, match="preferredDuringScheduling"):
        NodeAffinityArgs({"preferredDuringSchedulingIgnoredDuringExecution": preferred})
    good = {"key": "size", "operator": "Gt", "values": ["8"]}
    NodeAffinityArgs(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [good]}]
            }
        }
    )
