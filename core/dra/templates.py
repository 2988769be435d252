"""Claims made from ResourceClaimTemplates, as kube-controller-manager's resourceclaim
controller makes them (v1.34), for ``kubesalvo simulate``.

In a cluster the scheduler waits for the controller: a pod whose ``spec.resourceClaims``
entry names a template is not scheduled until a claim was made for it and its name
written into ``status.resourceClaimStatuses``. A snapshot taken while pods wait holds no
such claims, so simulate makes them the controller's way: the template's spec, its
labels, its annotations plus ``resource.kubernetes.io/pod-claim-name``, the pod as the
controlling owner, and a name of ``<pod>-<entry>-`` (both cut in proportion when longer
than 57 characters, as the controller cuts them) followed by five characters drawn as the
API server draws a generated name's suffix, from a seeded generator so that a run can be
repeated. An entry whose template does not exist gets no claim: the pod stays pending
with DynamicResources' "not created yet" answer, as the controller leaves it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["POD_CLAIM_NAME", "claims_from_templates", "generate_base"]

Obj = Mapping[str, Any]
# The annotation tying a made claim to the pod's entry.
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
# A generated name's base leaves room for 5 random characters in 63 (the controller's cut).
_MAX_BASE = 57
# The characters of a generated suffix (apimachinery's rand.String: no vowels, no 0/1/3).
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"


def generate_base(pod: str, entry: str) -> str:
    """The controller's generateName for the claim of ``pod``'s entry ``entry``."""
    base = f"{pod}-{entry}-"
    if len(base) <= _MAX_BASE:
        return base
    # Both parts cut in proportion, measured against the uncut base (no trailing hyphen).
    return (
        f"{pod[: len(pod) * _MAX_BASE // len(base)]}-{entry[: len(entry) * _MAX_BASE // len(base)]}"
    )


def claims_from_templates(
    pods: Iterable[MutableMapping[str, Any]],
    templates: Iterable[Obj],
    claims: Iterable[Obj],
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The claims the controller would make for ``pods``; each pod's
    ``status.resourceClaimStatuses`` gets the names, as the controller writes them.
    ``claims``: those already there (a made name is never one of them); ``seed``: the
    suffixes' generator."""
    by_name = {
        (
            (t.get("metadata") or {}).get("namespace", ""),
            (t.get("metadata") or {}).get("name", ""),
        ): t
        for t in templates
    }
    taken = {
        ((c.get("metadata") or {}).get("namespace", ""), (c.get("metadata") or {}).get("name", ""))
        for c in claims
    }
    draw = random.Random(seed)
    made: list[dict[str, Any]] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        status = pod.setdefault("status", {})
        recorded = {s.get("name") for s in status.get("resourceClaimStatuses") or ()}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            entry_name = entry.get("name", "")
            template = by_name.get((namespace, entry.get("resourceClaimTemplateName") or ""))
            if template is None or entry.get("resourceClaimName") or entry_name in recorded:
                continue
            while True:
                suffix = "".join(draw.choice(_SUFFIX) for _ in range(5))
                claim_name = generate_base(name, entry_name) + suffix
                if (namespace, claim_name) not in taken:
                    break
            taken.add((namespace, claim_name))
            made.append(_claim(template, namespace, claim_name, entry_name, meta))
            status["resourceClaimStatuses"] = [
                *(status.get("resourceClaimStatuses") or ()),
                {"name": entry_name, "resourceClaimName": claim_name},
            ]
    return made


def _claim(template: Obj, namespace: str, name: str, entry: str, pod: Obj) -> dict[str, Any]:
    spec = template.get("spec") or {}
    own = spec.get("metadata") or {}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "annotations": {**(own.get("annotations") or {}), POD_CLAIM_NAME: entry},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.get("name", ""),
                "uid": pod.get("uid", ""),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if own.get("labels"):
        metadata["labels"] = dict(own["labels"])
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": dict(spec.get("spec") or {}),
    }
