"""DynamicResources's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.dynamic_resources_hint import queueing_hint as dynamic_resources_hint
from tests.core.pernode.hint_fixtures import (
    CLAIM_ADD,
    CLAIM_UPDATE,
    claiming_pod,
    resource_claim,
)


def test_dynamic_resources_queues_for_its_own_claims_changes_only() -> None:
    p = claiming_pod()
    assert dynamic_resources_hint(p, CLAIM_ADD, None, resource_claim("mine"))
    assert not dynamic_resources_hint(p, CLAIM_ADD, None, resource_claim("other"))
    allocated = resource_claim("mine", allocated=True)
    assert dynamic_resources_hint(p, CLAIM_UPDATE, resource_claim("mine"), allocated)
    # metadata only (a finalizer added): the status is as before
    assert not dynamic_resources_hint(p, CLAIM_UPDATE, allocated, resource_claim("mine", True))


def test_dynamic_resources_queues_when_any_claim_is_deallocated() -> None:
    freed = (resource_claim("other", allocated=True), resource_claim("other"))
    assert dynamic_resources_hint(claiming_pod(), CLAIM_UPDATE, *freed)
