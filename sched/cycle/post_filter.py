"""Post-filter: DefaultPreemption's decisions for a burst's pods that fit nowhere, and
the rules that decide which PostFilter plugins run for a pod.

:func:`decide` runs in a worker thread on one picture of the cluster
(:class:`ClusterObjects`, taken on the event loop), one decision per pod in burst order,
each committed for the next; the writes are ``sched.preemption.execute``'s, driven by
``burst.BurstCycle``. DynamicResources' PostFilter fails with "not found" when a
PreFilter before its own ended the PreFilter run (``no_dynamic_resources_state``), which
also ends the run before DefaultPreemption (``ends_before_preemption``).

The picture's API dicts are converted once per object version: a burst with pods that fit
nowhere decides again and again on a cluster that changed by a few objects, and converting
its 20,000 running pods anew each time was half of the scheduler's CPU under churn. The
pods' dicts come from the runtime's memo (``ClusterObjects.forms``,
sched/informers/forms.py), shared with the cycle and the cache; the nodes' from
``ApiDicts``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesalvo.core.place import PlacementResult
from kubesalvo.core.plugins import names
from kubesalvo.core.preemption import (
    NOT_ELIGIBLE_NEVER,
    PREEMPTION_PREFIX,
    PreemptionArgs,
    PreemptionDecision,
    Preemptor,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.volumes import StorageObjects
from kubesalvo.sched.config import ProfileConfig
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.forms import PodForms
from kubesalvo.sched.queue import QueuedPod

__all__ = [
    "ApiDicts",
    "ClusterObjects",
    "PreemptionJob",
    "decide",
    "ends_before_preemption",
    "no_dynamic_resources_state",
]


@dataclass
class ClusterObjects:
    """What a preemption decision reads, as taken from the informers on the event loop.

    The objects are the informers' decoded Structs (turned into API dicts in the worker
    thread, off the event loop); ``assumed`` maps the UID of each pod the cache holds as
    assumed to its node, so the picture counts binds still in flight.
    """

    nodes: list[Any]
    pods: list[Any]
    pdbs: list[Any] = field(default_factory=list)
    namespaces: list[Any] = field(default_factory=list)
    assumed: dict[str, str] = field(default_factory=dict)
    # the volume filters' objects (a copy: the decision runs in a worker thread)
    storage: StorageObjects | None = None
    # the runtime's pod dicts (None: converted here, once per version while unchanged)
    forms: PodForms | None = None


class ApiDicts:
    """The API dicts of informer objects, converted once per (UID, resourceVersion).

    An informer hands out a new object for every version, and core reads dicts without
    changing them, so a version's dict can serve every decision until it changes. Each
    call keeps only the versions it was given: the cache holds the current picture, never
    the objects gone since. Objects without a UID or resourceVersion are converted anew.
    """

    def __init__(self) -> None:
        self._dicts: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()  # decisions run in worker threads

    def of(self, objects: Iterable[Any]) -> list[dict[str, Any]]:
        with self._lock:
            known = self._dicts
            fresh: dict[tuple[str, str], dict[str, Any]] = {}
            out = []
            for obj in objects:
                meta = obj.metadata
                key = (meta.uid, meta.resource_version)
                if not key[0] or not key[1]:
                    out.append(to_api_dict(obj))
                    continue
                converted = known.get(key)
                if converted is None:
                    converted = to_api_dict(obj)
                fresh[key] = converted
                out.append(converted)
            self._dicts = fresh
            return out


_NODES = ApiDicts()
_PODS = ApiDicts()  # for a picture without the runtime's memo (a cycle without informers)


def _preemptor(
    objects: ClusterObjects,
    pending: list[dict[str, Any]],
    profile: Profile,
    args: PreemptionArgs,
) -> Preemptor:
    """The picture for one burst's decisions; ``pending`` (the burst's unplaced pods, as
    API dicts) replace their informer copies so that commits find them by identity."""
    keys = {(p.get("metadata") or {}).get("uid") for p in pending}
    others = [obj for obj in objects.pods if obj.metadata.uid not in keys]
    pods: list[dict[str, Any]] = []
    converted = objects.forms.of(others) if objects.forms is not None else _PODS.of(others)
    for obj, pod in zip(others, converted, strict=True):
        node = objects.assumed.get(obj.metadata.uid)
        if node is not None and not obj.spec.node_name:
            # A copy: the converted dict is shared with later decisions.
            pod = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        pods.append(pod)
    pods.extend(pending)
    return Preemptor(
        _NODES.of(objects.nodes),
        pods,
        [to_api_dict(b) for b in objects.pdbs],
        profile,
        namespaces=[to_api_dict(ns) for ns in objects.namespaces],
        args=args,
        storage=objects.storage,
    )


def decide(
    objects: ClusterObjects,
    pending: list[dict[str, Any]],
    profile: Profile,
    args: PreemptionArgs,
    device_failures: Mapping[str, Mapping[str, str]] | None = None,
) -> list[PreemptionDecision]:
    """One decision per pod, in the burst's order, each committed for the next.
    ``device_failures``: for the pods with claims, by uid, DynamicResources' Filter
    failures on each node from their cycle (the dry run's verdicts for that plugin).

    A decision that found no node leaves the picture as it was, so until a decision does
    pick a node, a pod identical to one already decided (same namespace, labels, spec and
    nomination: replicas of one template) gets a copy of its answer instead of another
    pass over every node. A burst of thousands of pods that fit nowhere and can evict
    nothing costs one decision per template, not one per pod.
    """
    preemptor: Preemptor | None = None
    decisions = []
    answered: dict[bytes, PreemptionDecision] = {}
    for pod in pending:
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            # Upstream's first eligibility check; answered without building the picture.
            decisions.append(
                PreemptionDecision(None, message=PREEMPTION_PREFIX + NOT_ELIGIBLE_NEVER)
            )
            continue
        key = _template_key(pod)
        known = answered.get(key)
        if known is not None:
            decisions.append(dataclasses.replace(known, reason_counts=dict(known.reason_counts)))
            continue
        if preemptor is None:
            preemptor = _preemptor(objects, pending, profile, args)
            preemptor.evaluator.device_failures = dict(device_failures or {})
        decision = preemptor.preempt(pod)
        preemptor.commit(pod, decision)
        decisions.append(decision)
        if decision.node is None:
            answered[key] = decision
        else:
            answered.clear()
    return decisions


def _template_key(pod: Mapping[str, Any]) -> bytes:
    """What a decision about ``pod`` depends on, of the pod itself (not its name or UID)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return msgspec.json.encode(
        [
            meta.get("namespace") or "",
            meta.get("labels") or {},
            pod.get("spec") or {},
            status.get("nominatedNodeName") or "",
        ],
        order="sorted",
    )


@dataclass
class PreemptionJob:
    """A burst's pods that fit nowhere, waiting for DefaultPreemption (in flight meanwhile)."""

    profile_name: str
    profile: Profile
    pods: list[QueuedPod]
    result: PlacementResult
    failed: list[int]  # indices into pods and result
    args: PreemptionArgs
    began: float
    # DynamicResources' Filter failures by node, of the failed pods with claims, by uid
    device_failures: dict[str, Mapping[str, str]] = field(default_factory=dict)


def no_dynamic_resources_state(profile: ProfileConfig, result: PlacementResult, i: int) -> bool:
    """Whether a PreFilter rejection ended the PreFilter run before DynamicResources'
    PreFilter (which writes the state its PostFilter reads) ran for pod ``i``."""
    rejector = result.prefilter_rejector[i]
    if not rejector:
        return False
    pre_filters = profile.plugins.at("preFilter")
    if names.DYNAMIC_RESOURCES not in pre_filters:
        return True
    return rejector in pre_filters and pre_filters.index(
        names.DYNAMIC_RESOURCES
    ) > pre_filters.index(rejector)


def ends_before_preemption(profile: ProfileConfig, result: PlacementResult, i: int) -> bool:
    """DynamicResources' PostFilter ends the run with an error before DefaultPreemption is
    reached (see ``no_dynamic_resources_state``): no preemption for the pod."""
    post_filters = profile.plugins.at("postFilter")
    if names.DYNAMIC_RESOURCES not in post_filters:
        return False
    first = post_filters.index(names.DYNAMIC_RESOURCES) < post_filters.index(
        names.DEFAULT_PREEMPTION
    )
    return first and no_dynamic_resources_state(profile, result, i)
