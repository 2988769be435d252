"""The controllers that would own a burst: ReplicaSets and Jobs for a real control plane.

``make_pods`` gives bare pods, which is what a scheduler benchmark wants to create at its
own pace. On a real control plane the same burst can instead be created the way users
create it: one ReplicaSet per ReplicaSet-like class and one Job per Job or gang, whose pods
the controller manager then creates (with ``ownerReferences``, so that kube-scheduler's
default spreading sees their owners). One-off pods stay bare pods.

The objects are fresh dicts, except that pod templates share the read-only nested parts
of their class (see ``pods``).
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.synthetic.pods import WORKLOAD_LABEL, PodClass
from kubesalvo.core.synthetic.workloads import Batch

# The Job controller sets these on its pods itself; a template may not carry its own.
_JOB_OWNED_LABELS = (
    "batch.kubernetes.io/job-name",
    "job-name",
    "batch.kubernetes.io/controller-uid",
)
REPLICA_SET_WORKLOADS = ("replicaset", "service")
JOB_WORKLOADS = ("job", "gang")


def _template(pod_class: PodClass, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    labels = {k: v for k, v in pod_class.labels.items() if k not in drop}
    labels[WORKLOAD_LABEL] = pod_class.workload
    metadata: dict[str, Any] = {"labels": labels}
    if pod_class.annotations:
        metadata["annotations"] = dict(pod_class.annotations)
    return {"metadata": metadata, "spec": pod_class.spec()}


def replica_set(pod_class: PodClass, replicas: int) -> dict[str, Any]:
    """A ReplicaSet selecting exactly its class's pods (by app and pod-template-hash)."""
    template = _template(pod_class)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": pod_class.name,
            "namespace": pod_class.namespace,
            "labels": {"app": pod_class.labels["app"]},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(pod_class.labels)},
            "template": template,
        },
    }


def job(pod_class: PodClass, completions: int) -> dict[str, Any]:
    """A Job running all its pods at once (a gang needs every member up together)."""
    template = _template(pod_class, drop=_JOB_OWNED_LABELS)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": pod_class.name, "namespace": pod_class.namespace},
        "spec": {
            "completions": completions,
            "parallelism": completions,
            "backoffLimit": 0,
            "template": template,
        },
    }


def as_controllers(batch: Batch) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ReplicaSets and Jobs, bare pods) that together make the burst ``batch`` describes."""
    controllers: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    for pod_class, count in batch:
        if pod_class.workload in REPLICA_SET_WORKLOADS:
            controllers.append(replica_set(pod_class, count))
        elif pod_class.workload in JOB_WORKLOADS:
            controllers.append(job(pod_class, count))
        else:
            bare.extend(pod_class.replicas(count))
    return controllers, bare
