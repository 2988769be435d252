"""InterPodAffinity: its args (the hard pod affinity weight's range) and its PreFilter (a
pod whose own terms do not parse is rejected on every node) and PreScore check (such a
pod fails with an error, unless PreScore skips the plugin)."""

from typing import Any

import pytest

from kubesalvo.core.label_selectors import pod_affinity_error
from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.inter_pod_affinity import (
    OWN_TERMS,
    OWN_TERMS_AT_PRESCORE,
    PARSING_POD,
    PRESCORE_PARSING_POD,
    SPEC,
    InterPodAffinityArgs,
)
from tests.core.plugins.test_pod_topology_spread import INVALID, Parsed


def test_hard_pod_affinity_weight_range():
    with pytest.raises(ProfileError, match=r"\[0, 100\]"):
        InterPodAffinityArgs(hard_pod_affinity_weight=101)


def anti_affinity(selector: dict[str, Any]) -> dict[str, Any]:
    term = {"labelSelector": selector, "topologyKey": "zone"}
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def test_the_spec_contributes_the_prefilter_for_pods_with_affinity():
    assert SPEC.pre_filter is OWN_TERMS
    assert OWN_TERMS.reads == "affinity"
    assert not OWN_TERMS.narrows


def test_a_pod_whose_own_terms_do_not_parse_is_rejected_on_every_node():
    spec = anti_affinity(INVALID)
    error = pod_affinity_error(spec)
    assert error is not None
    answer = OWN_TERMS.run(None, None, Parsed(spec, affinity_error=error))
    assert answer is not None and not answer.error and answer.keep is None
    assert answer.message == PARSING_POD + error


def test_terms_that_parse_pass_the_prefilter():
    spec = anti_affinity({"matchLabels": {"app": "web"}})
    assert pod_affinity_error(spec) is None
    assert OWN_TERMS.run(None, None, Parsed(spec)) is None


def preferred_affinity(selector: dict[str, Any]) -> dict[str, Any]:
    term = {"weight": 10, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "zone"}}
    return {
        "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def test_the_spec_contributes_the_prescore_check_for_pods_with_affinity():
    assert SPEC.pre_score is OWN_TERMS_AT_PRESCORE
    assert OWN_TERMS_AT_PRESCORE.reads == "affinity"


def test_own_terms_that_do_not_parse_fail_at_prescore():
    spec = anti_affinity(INVALID)
    error = pod_affinity_error(spec)
    assert error is not None
    cls = Parsed(spec, affinity_error=error)
    assert OWN_TERMS_AT_PRESCORE.run(InterPodAffinityArgs(), None, cls) == (
        PRESCORE_PARSING_POD + error
    )


def test_ignoring_existing_preferred_terms_skips_a_pod_without_preferred_terms():
    ignoring = InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True)
    required = anti_affinity(INVALID)
    skipped = Parsed(required, affinity_error=pod_affinity_error(required))
    assert OWN_TERMS_AT_PRESCORE.run(ignoring, None, skipped) is None
    with_preferred = preferred_affinity(INVALID)
    error = pod_affinity_error(with_preferred)
    assert error is not None
    cls = Parsed(with_preferred, affinity_error=error)
    assert OWN_TERMS_AT_PRESCORE.run(ignoring, None, cls) == PRESCORE_PARSING_POD + error
