"""InterPodAffinity's queueing hint: a placed pod that the pod's affinity wants appeared,
or one its anti-affinity (or whose anti-affinity) kept it away is gone. Every bind is a
pod event, so this hint is asked often."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.hint_objects import ByIdentity, api, spec_of
from kubesalvo.core.pernode.inter_pod_affinity import Term, pod_terms
from kubesalvo.core.pernode.selectors import NOTHING, InvalidSelector
from kubesalvo.core.pernode.snapshot import labels_of, namespace_of
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]


def _affinity_terms(pod: Any) -> tuple[list[Term], list[Term]] | None:
    """The pod's required affinity and anti-affinity terms; None if a hint cannot judge
    them (a namespaceSelector needs namespace labels, or a selector is invalid)."""
    try:
        terms = pod_terms(api(pod), "podAffinity", True)
        anti = pod_terms(api(pod), "podAntiAffinity", True)
    except InvalidSelector:
        return None
    if any(t.namespace_selector is not NOTHING for t in (*terms, *anti)):
        return None
    return terms, anti


_terms = ByIdentity(_affinity_terms, 65536)


def _matches_all(terms: list[Term], other: Any) -> bool:
    found = api(other)
    return bool(terms) and all(
        namespace_of(found) in t.namespaces and t.selector.matches(labels_of(found)) for t in terms
    )


def _anti_affinity_selects(placed: Any, pod: Any) -> bool:
    """Whether a placed pod's required anti-affinity selects ``pod`` (may, if unsure)."""
    found = _affinity_terms(placed)
    if found is None:
        return True
    return any(_matches_all([t], pod) for t in found[1])


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """InterPodAffinity: a placed pod that the pod's affinity wants appeared, or one its
    anti-affinity (or whose anti-affinity) kept it away is gone."""
    if event.resource is not EventResource.POD:
        return True
    if any(o is not None and not spec_of(o).get("nodeName") for o in (old, new)):
        return False  # only placed pods count
    found = _terms(pod)
    if found is None:
        return True
    terms, anti = found
    if old is not None and new is not None:
        return (not _matches_all(terms, old) and _matches_all(terms, new)) or (
            _matches_all(anti, old) and not _matches_all(anti, new)
        )
    if new is not None:
        return _matches_all(terms, new)
    if old is None:
        return True
    # Beyond kube-scheduler's hint: the deleted pod's own anti-affinity may have been
    # what rejected this pod (existing pods' anti-affinity), so that counts too.
    return _matches_all(anti, old) or _anti_affinity_selects(old, pod)
