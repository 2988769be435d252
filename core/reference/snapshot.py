"""The cluster as the reference plugins see it: one NodeInfo per node, kept by assume().

This mirrors kube-scheduler's cache snapshot:

* a node's pods are the pods bound to it (``spec.nodeName``) plus the ones assumed
  there; pods that have finished (phase Succeeded or Failed) are left out, as the
  scheduler's pod informer filters them away, and so are pods bound to unknown nodes;
* ``requested`` sums the pods' requests (counting in-place resizes, as the cache does);
  ``nonzero_cpu``/``nonzero_memory`` the same with 100m/200Mi for containers that name
  no cpu or memory (used by the resource scores);
* image states: for each image name, the nodes that report it and its size, the size
  being the one reported by the first node (in the given order) that lists the name,
  as the cache keeps the size it saw first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.resources import (
    HostPort,
    host_ports,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
)

__all__ = ["ImageState", "NodeInfo", "Snapshot", "labels_of", "namespace_of", "pod_key"]

_TERMINATED = frozenset({"Succeeded", "Failed"})


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def namespace_of(pod: Mapping[str, Any]) -> str:
    return (pod.get("metadata") or {}).get("namespace") or "default"


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name``, how pods are named in results and messages."""
    return f"{namespace_of(pod)}/{(pod.get('metadata') or {}).get('name', '')}"


@dataclass
class NodeInfo:
    """One node and what is placed on it."""

    node: Mapping[str, Any]
    name: str
    labels: dict[str, str]
    taints: list[Mapping[str, Any]]
    unschedulable: bool
    allocatable: dict[str, int]
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    used_ports: set[tuple[str, str, int]] = field(default_factory=set)

    @classmethod
    def of(cls, node: Mapping[str, Any]) -> NodeInfo:
        spec = node.get("spec") or {}
        return cls(
            node=node,
            name=(node.get("metadata") or {}).get("name", ""),
            labels=labels_of(node),
            taints=list(spec.get("taints") or ()),
            unschedulable=bool(spec.get("unschedulable")),
            allocatable=node_allocatable(node),
        )

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        self.pods.append(pod)
        for name, amount in pod_requests(pod, use_status=True).items():
            self.requested[name] = self.requested.get(name, 0) + amount
        cpu, memory = pod_nonzero_requests(pod, use_status=True)
        self.nonzero_cpu += cpu
        self.nonzero_memory += memory
        for port in host_ports(pod):
            self.used_ports.add(_sanitized(port))

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        self.pods.remove(pod)
        for name, amount in pod_requests(pod, use_status=True).items():
            self.requested[name] = self.requested.get(name, 0) - amount
        cpu, memory = pod_nonzero_requests(pod, use_status=True)
        self.nonzero_cpu -= cpu
        self.nonzero_memory -= memory
        # Ports are a set upstream too: removing a pod frees its ports even if another
        # pod on the node declared the same one.
        for port in host_ports(pod):
            self.used_ports.discard(_sanitized(port))


def _sanitized(port: HostPort) -> tuple[str, str, int]:
    return (port.host_ip or "0.0.0.0", port.protocol or "TCP", port.port)


@dataclass(frozen=True)
class ImageState:
    """An image name known in the cluster: its size and how many nodes have it."""

    size: int
    num_nodes: int


@dataclass
class Snapshot:
    """All nodes (in the given order), their pods, the namespaces, and image states."""

    nodes: list[NodeInfo]
    by_name: dict[str, NodeInfo]
    namespaces: dict[str, dict[str, str]]  # name -> labels
    node_images: dict[str, frozenset[str]]  # node name -> image names it has
    images: dict[str, ImageState]
    workloads: list[Mapping[str, Any]]

    @classmethod
    def build(
        cls,
        nodes: Iterable[Mapping[str, Any]],
        pods: Iterable[Mapping[str, Any]],
        namespaces: Iterable[Mapping[str, Any]] = (),
        workloads: Iterable[Mapping[str, Any]] = (),
    ) -> Snapshot:
        infos = [NodeInfo.of(n) for n in nodes]
        by_name = {info.name: info for info in infos}
        if len(by_name) != len(infos):
            raise ValueError("node names must be unique")
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            phase = (pod.get("status") or {}).get("phase")
            if node_name in by_name and phase not in _TERMINATED:
                by_name[node_name].add_pod(pod)
        sizes: dict[str, int] = {}
        holders: dict[str, set[str]] = {}
        node_images: dict[str, frozenset[str]] = {}
        for info in infos:
            names: set[str] = set()
            for image in (info.node.get("status") or {}).get("images") or ():
                for name in image.get("names") or ():
                    sizes.setdefault(name, int(image.get("sizeBytes") or 0))
                    holders.setdefault(name, set()).add(info.name)
                    names.add(name)
            node_images[info.name] = frozenset(names)
        return cls(
            nodes=infos,
            by_name=by_name,
            namespaces={
                (ns.get("metadata") or {}).get("name", ""): labels_of(ns) for ns in namespaces
            },
            node_images=node_images,
            images={name: ImageState(sizes[name], len(holders[name])) for name in sizes},
            workloads=list(workloads),
        )

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The labels of a namespace, or None when the namespace is unknown."""
        return self.namespaces.get(namespace)
