"""A scenario's storage on the bench: a set of volumes and claims of its own for each run.

A scenario with a ``stateful`` workload (``core/synthetic/stateful.py``) carries its
StorageClass, local PersistentVolumes and one claim per pod. Each contender gets fresh
copies: a volume bound once is Released, never Available again, and names differ between
runs as the pods' do (``workload.burst``). Before the clock the class, the volumes and the
claims are created (the claims before the pods, as the StatefulSet controller makes
them), and the run waits until kube-controller-manager's persistent-volume controller has
marked every volume Available (kube-scheduler matches only Available volumes). After the
run ``check`` reads back from the API server where each pod's claim is bound, and
``delete`` removes the run's claims and volumes.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core import volumes
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.sched.bench import readback
from kubesalvo.sched.bench.workload import RUN_LABEL
from kubesalvo.sched.cluster.api import ApiClient, Object

HOSTNAME = "kubernetes.io/hostname"


@dataclass
class RunStorage:
    run_id: str
    classes: list[Object] = field(default_factory=list)
    volumes: list[Object] = field(default_factory=list)
    claims: list[Object] = field(default_factory=list)

    @property
    def selector(self) -> str:
        return f"{RUN_LABEL}={self.run_id}"


def _labelled(obj: Object, name: str, run_id: str) -> dict[str, Any]:
    metadata = dict(obj["metadata"])
    metadata["name"] = name
    metadata["labels"] = {**(metadata.get("labels") or {}), RUN_LABEL: run_id}
    copy = {key: value for key, value in obj.items() if key != "status"}
    copy["metadata"] = metadata
    return copy


def for_run(cluster: Snapshot, pods: list[Object], run_id: str) -> RunStorage | None:
    """The run's copies of the cluster's storage objects (None when it has none), names
    ending in the run's suffix; ``pods`` (the run's copies, see ``workload.burst``) are
    changed to use the renamed claims."""
    if not cluster.storage.get(volumes.CLAIMS):
        return None
    suffix = run_id.rsplit("-", 1)[-1]
    storage = RunStorage(run_id)
    storage.classes = list(cluster.storage.get(volumes.CLASSES, []))
    for pv in cluster.storage.get(volumes.VOLUMES, []):
        storage.volumes.append(_labelled(pv, f"{pv['metadata']['name']}-{suffix}", run_id))
    for claim in cluster.storage[volumes.CLAIMS]:
        storage.claims.append(_labelled(claim, f"{claim['metadata']['name']}-{suffix}", run_id))
    for pod in pods:
        spec = pod.get("spec") or {}
        if not spec.get("volumes"):
            continue
        renamed = []
        for volume in spec["volumes"]:
            source = volume.get("persistentVolumeClaim")
            if source is not None:
                source = {**source, "claimName": f"{source['claimName']}-{suffix}"}
                volume = {**volume, "persistentVolumeClaim": source}
            renamed.append(volume)
        pod["spec"] = {**spec, "volumes": renamed}
    return storage


async def create(client: ApiClient, storage: RunStorage, timeout: float) -> float:
    """Creates the class (if missing), the volumes and the claims, and waits until every
    volume is Available; returns the seconds it took."""
    began = time.monotonic()
    await client.create_all(storage.classes, exist_ok=True)
    await client.create_all(storage.volumes)
    await client.create_all(storage.claims)
    while True:
        listed = await readback.list_all(client, "/api/v1/persistentvolumes", storage.selector)
        available = sum((pv.get("status") or {}).get("phase") == "Available" for pv in listed)
        if available == len(storage.volumes):
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            raise RuntimeError(
                f"{available} of {len(storage.volumes)} volumes Available after {timeout:.0f}s"
            )
        await asyncio.sleep(0.5)


async def delete(client: ApiClient, storage: RunStorage, concurrency: int) -> None:
    """Deletes the run's claims, then its volumes (their protection finalizers let them go
    once no pod uses them; nothing waits for that: the next run's names differ)."""
    for objects in (storage.claims, storage.volumes):
        await readback.delete_all(client, objects, concurrency)


def _pv_host(pv: Object) -> str | None:
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for expr in term.get("matchExpressions") or ():
            if expr.get("key") == HOSTNAME and expr.get("operator") == "In":
                values = expr.get("values") or []
                if len(values) == 1:
                    return str(values[0])
    return None


async def check(client: ApiClient, storage: RunStorage) -> readback.ClaimCheck:
    """Every bound pod of the run has each claim bound to a volume of the run whose node
    affinity names the pod's node (by hostname), and no volume holds two claims."""
    pods = await readback.list_all(client, "/api/v1/pods", storage.selector)
    claims = {
        f"{c['metadata']['namespace']}/{c['metadata']['name']}": c
        for c in await readback.list_all(client, "/api/v1/persistentvolumeclaims", storage.selector)
    }
    pvs = {
        pv["metadata"]["name"]: pv
        for pv in await readback.list_all(client, "/api/v1/persistentvolumes", storage.selector)
    }
    nodes = {n["metadata"]["name"]: n for n in await readback.list_all(client, "/api/v1/nodes", "")}
    result = readback.ClaimCheck()
    holders: Counter[str] = Counter()
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            continue
        namespace = pod["metadata"]["namespace"]
        key = f"{namespace}/{pod['metadata']['name']}"
        node = nodes.get(node_name)
        host = ((node or {}).get("metadata", {}).get("labels") or {}).get(HOSTNAME, node_name)
        for _, claim_name in volumes.claim_volumes(pod.get("spec") or {}):
            result.claims_checked += 1
            claim = claims.get(f"{namespace}/{claim_name}")
            if claim is None:
                result.add(f"{key}: claim {claim_name} not found")
                continue
            volume_name = (claim.get("spec") or {}).get("volumeName") or ""
            phase = (claim.get("status") or {}).get("phase")
            if not volume_name or phase != "Bound":
                result.add(f"{key} on {node_name}: claim {claim_name} is {phase}, not bound")
                continue
            holders[volume_name] += 1
            pv = pvs.get(volume_name)
            if pv is None:
                result.add(f"{key}: claim {claim_name} bound to {volume_name}, not of the run")
                continue
            pv_host = _pv_host(pv)
            if pv_host is not None and pv_host != host:
                result.add(f"{key} on {node_name}: its volume {volume_name} is on node {pv_host}")
    for name, count in holders.items():
        if count > 1:
            result.add(f"volume {name} holds {count} claims")
    return result
