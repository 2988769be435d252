"""A stateful workload: StatefulSet-like pods, each with its own claim on local disks.

What a StatefulSet with ``volumeClaimTemplates`` on a WaitForFirstConsumer class of local
PersistentVolumes leaves for the scheduler: ``count`` pods ``<prefix>db-<i>``, pod ``i``
using the claim ``data-<prefix>db-<i>`` (the controller's naming), each claim unbound and
asking for ``CLAIM_SIZE``; ``pvs_per_node`` static local PVs on every node, each with node
affinity to its node's hostname (as a local-volume provisioner publishes them), in the
no-provisioner class ``STORAGE_CLASS``. A pod fits only a node that still holds a free PV,
and VolumeBinding chooses the PV.

The storage objects come back by kind (``core.volumes.KINDS``) as a ``Snapshot`` keeps them.
Generation does no I/O and is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesalvo.core import volumes
from kubesalvo.core.synthetic.pods import WORKLOAD_LABEL, container

Object = dict[str, Any]

STORAGE_CLASS = "local-wffc"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
NAMESPACE = "team-e"
HOSTNAME_LABEL = "kubernetes.io/hostname"
PV_SIZE = "100Gi"
CLAIM_SIZE = "50Gi"
CPU_MILLIS = 500
MEMORY = 1 << 30
IMAGE = "registry.k8s.io/pause:3.10"


def storage_class() -> Object:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": NO_PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Retain",
    }


def _hostname(node: Object) -> str:
    meta = node["metadata"]
    return (meta.get("labels") or {}).get(HOSTNAME_LABEL) or meta["name"]


def local_volumes(nodes: Sequence[Object], per_node: int, prefix: str = "") -> list[Object]:
    """``per_node`` local PVs on each node, named ``<prefix>local-<node>-<k>``."""
    pvs = []
    for node in nodes:
        host = _hostname(node)
        for k in range(per_node):
            pvs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"{prefix}local-{node['metadata']['name']}-{k}"},
                    "spec": {
                        "capacity": {"storage": PV_SIZE},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": STORAGE_CLASS,
                        "volumeMode": "Filesystem",
                        "local": {"path": f"/mnt/disks/vol{k}"},
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": HOSTNAME_LABEL,
                                                "operator": "In",
                                                "values": [host],
                                            }
                                        ]
                                    }
                                ]
                            }
                        },
                    },
                    # What the PV controller sets on a new volume; a snapshot records it.
                    "status": {"phase": "Available"},
                }
            )
    return pvs


def claim(name: str, namespace: str = NAMESPACE) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "db"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": CLAIM_SIZE}},
        },
        "status": {"phase": "Pending"},
    }


def make_stateful(
    count: int,
    nodes: Sequence[Object],
    *,
    scheduler_name: str = "kubesalvo",
    prefix: str = "",
    pvs_per_node: int = 2,
) -> tuple[list[Object], dict[str, list[Object]]]:
    """The pending pods and the storage objects (class, PVs, claims) by kind."""
    if count < 0:
        raise ValueError(f"pod count must be non-negative, got {count}")
    app = f"{prefix}db"
    labels = {"app": app, WORKLOAD_LABEL: "statefulset"}
    containers = [container("db", IMAGE, CPU_MILLIS, MEMORY, memory_limit=MEMORY)]
    pods: list[Object] = []
    claims: list[Object] = []
    for index in range(count):
        name = f"{app}-{index}"
        claim_name = f"data-{name}"
        claims.append(claim(claim_name))
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "labels": {**labels, "statefulset.kubernetes.io/pod-name": name},
                },
                "spec": {
                    "schedulerName": scheduler_name,
                    "containers": containers,
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "volumes": [
                        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
                    ],
                },
            }
        )
    storage = {
        volumes.CLASSES: [storage_class()],
        volumes.VOLUMES: local_volumes(nodes, pvs_per_node, prefix),
        volumes.CLAIMS: claims,
    }
    return pods, storage
