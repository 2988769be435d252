"""The burst as users create it: through Deployments and Jobs, not as bare pods.

A scenario whose ``bench.create`` is ``deployments`` has each ReplicaSet-like class of its
burst created as a Deployment (kube-controller-manager then makes its ReplicaSet and the
pods, with ownerReferences, so that kube-scheduler's default topology spreading applies as
in real clusters), each Job or gang class as a Job, and the one-off pods as bare pods.
``scale-up`` creates the same Deployments with 0 replicas before the clock starts, then
scales each to its size through the ``scale`` subresource, as an autoscaler does.

Pod names are chosen by the controllers, so the run's pods are found by the run label
every template carries, and their creation time is when the measuring watch first sees
them (``BindWatch.seen``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.synthetic import Scenario, make_batch
from kubesalvo.core.synthetic.controllers import as_controllers
from kubesalvo.sched.bench.workload import RUN_LABEL
from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object

# The Deployment controller sets this label itself, from its template's hash.
_HASH_LABEL = "pod-template-hash"


@dataclass
class Rollout:
    """What one run creates: controllers (with the replicas each will make) and bare pods."""

    deployments: list[Object] = field(default_factory=list)
    jobs: list[Object] = field(default_factory=list)
    pods: list[Object] = field(default_factory=list)
    replicas: dict[str, int] = field(default_factory=dict)  # "namespace/name" -> replicas

    @property
    def total(self) -> int:
        return len(self.pods) + sum(self.replicas.values())

    @property
    def controllers(self) -> list[Object]:
        return self.deployments + self.jobs


def plan(scenario: Scenario, scheduler_name: str, run_id: str) -> Rollout:
    """The scenario's pending workloads as Deployments, Jobs and bare pods for one run.

    The classes are drawn exactly as ``Scenario.generate`` draws the burst (same seeds and
    prefixes), so the pods the controllers make are the ones a bare-pod run creates."""
    suffix = run_id.rsplit("-", 1)[-1]
    fleet = scenario.fleet.fleet()
    rollout = Rollout()
    for index, workload in enumerate(scenario.workloads):
        if workload.bound:
            continue
        batch = make_batch(
            workload.pods,
            scenario.seed * 1009 + index + 1,
            workload.shape,
            classes=workload.classes,
            scheduler_name=scheduler_name,
            prefix=scenario.prefix(index),
            fleet=fleet,
        )
        controllers, bare = as_controllers(batch)
        for controller in controllers:
            owned = _for_run(controller, suffix, run_id)
            meta = owned["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            if owned["kind"] == "ReplicaSet":
                owned = _deployment(owned)
                rollout.deployments.append(owned)
                rollout.replicas[key] = owned["spec"]["replicas"]
            else:
                rollout.jobs.append(owned)
                rollout.replicas[key] = owned["spec"]["completions"]
        for pod in bare:
            pod["metadata"]["name"] = f"{pod['metadata']['name']}-{suffix}"
            pod["metadata"]["labels"] = {**pod["metadata"]["labels"], RUN_LABEL: run_id}
            rollout.pods.append(pod)
    return rollout


def _for_run(controller: Object, suffix: str, run_id: str) -> Object:
    """A copy named for this run whose pods carry the run label."""
    template = controller["spec"]["template"]
    labels = {**template["metadata"]["labels"], RUN_LABEL: run_id}
    metadata = {**controller["metadata"], "name": f"{controller['metadata']['name']}-{suffix}"}
    spec = {**controller["spec"], "template": {**template, "metadata": {**template["metadata"]}}}
    spec["template"]["metadata"]["labels"] = labels
    if "selector" in spec:
        spec["selector"] = {"matchLabels": {**spec["selector"]["matchLabels"], RUN_LABEL: run_id}}
    return {**controller, "metadata": metadata, "spec": spec}


def _deployment(replica_set: Object) -> Object:
    spec = replica_set["spec"]
    template = spec["template"]
    labels = {k: v for k, v in template["metadata"]["labels"].items() if k != _HASH_LABEL}
    selector = {k: v for k, v in spec["selector"]["matchLabels"].items() if k != _HASH_LABEL}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": replica_set["metadata"],
        "spec": {
            "replicas": spec["replicas"],
            "selector": {"matchLabels": selector},
            "template": {**template, "metadata": {**template["metadata"], "labels": labels}},
        },
    }


def at_zero(rollout: Rollout) -> list[Object]:
    """The Deployments with 0 replicas (scale-up creates these before the clock starts)."""
    return [{**d, "spec": {**d["spec"], "replicas": 0}} for d in rollout.deployments]


async def create(client: ApiClient, rollout: Rollout) -> None:
    """Creates the controllers and the bare pods (the controllers first: they are few and
    their pods take the controller manager's time)."""
    await client.create_all(rollout.controllers)
    await client.create_all(rollout.pods)


async def scale_up(client: ApiClient, rollout: Rollout, concurrency: int) -> None:
    """Scales each Deployment (created at 0) to its size through ``scale``; creates the
    Jobs and bare pods."""
    slots = asyncio.Semaphore(concurrency)

    async def scale(deployment: Object) -> None:
        meta = deployment["metadata"]
        path = f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments/{meta['name']}/scale"
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "spec": {"replicas": deployment["spec"]["replicas"]},
        }
        async with slots:
            await client.request("PUT", path, body)

    await asyncio.gather(*(scale(d) for d in rollout.deployments))
    await client.create_all(rollout.jobs)
    await client.create_all(rollout.pods)


async def delete_controllers(client: ApiClient, rollout: Rollout) -> None:
    """Deletes the Deployments and Jobs; the garbage collector then deletes their
    ReplicaSets and pods. A controller already gone is no error."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    for controller in rollout.controllers:
        meta = controller["metadata"]
        group = "apps/v1" if controller["kind"] == "Deployment" else "batch/v1"
        plural = "deployments" if controller["kind"] == "Deployment" else "jobs"
        path = f"/apis/{group}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
        try:
            await client.request("DELETE", path, body)
        except ApiError as error:
            if error.status != 404:
                raise


def describe(rollout: Rollout) -> dict[str, Any]:
    return {
        "deployments": len(rollout.deployments),
        "jobs": len(rollout.jobs),
        "bare_pods": len(rollout.pods),
        "pods": rollout.total,
    }
