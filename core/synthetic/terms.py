"""Builders for the constraint terms of a pod spec, in the API's JSON shape."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.synthetic.catalog import GPU_TAINT, INFRA_TAINT, SPOT_TAINT

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"


def toleration(key: str, value: str | None, effect: str | None) -> dict[str, Any]:
    if value is None:
        result: dict[str, Any] = {"key": key, "operator": "Exists"}
    else:
        result = {"key": key, "operator": "Equal", "value": value}
    if effect is not None:
        result["effect"] = effect
    return result


SPOT_TOLERATION = toleration(SPOT_TAINT.key, SPOT_TAINT.value, SPOT_TAINT.effect)
GPU_TOLERATION = toleration(GPU_TAINT.key, GPU_TAINT.value, GPU_TAINT.effect)
INFRA_TOLERATION = toleration(INFRA_TAINT.key, INFRA_TAINT.value, INFRA_TAINT.effect)


def expression(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        result["values"] = values
    return result


def required_node_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """Terms are ORed, the expressions inside one term ANDed."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": term} for term in terms]
        }
    }


def preferred(weight: int, term: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": term}


def pod_term(
    labels: dict[str, str], topology_key: str, namespace_selector: dict[str, Any] | None = None
) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key}
    if namespace_selector is not None:
        term["namespaceSelector"] = namespace_selector
    return term


def spread(
    labels: dict[str, str],
    topology_key: str,
    max_skew: int = 1,
    when_unsatisfiable: str = "ScheduleAnyway",
    *,
    min_domains: int | None = None,
    match_label_keys: list[str] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": topology_key,
        "whenUnsatisfiable": when_unsatisfiable,
        "labelSelector": {"matchLabels": labels},
    }
    if min_domains is not None:
        result["minDomains"] = min_domains
    if match_label_keys is not None:
        result["matchLabelKeys"] = match_label_keys
    return result
