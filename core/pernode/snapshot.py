"""The cluster as the per-node plugins see it: one NodeInfo per node, kept by assume().

This mirrors kube-scheduler's cache (``pkg/scheduler/backend/cache``) and its snapshot:

* a node's pods are the pods bound to it (``spec.nodeName``) plus the ones assumed
  there; pods that have finished (phase Succeeded or Failed) are left out, as the
  scheduler's pod informer filters them away;
* the pods of a node the cache does not hold (not added yet, or removed while pods were
  still on it) are kept under its name but are in no snapshot; a node added under that
  name has them again (``Cache``);
* ``requested`` sums the pods' requests (counting in-place resizes, as the cache does);
  ``nonzero_cpu``/``nonzero_memory`` the same with 100m/200Mi for containers that name
  no cpu or memory (used by the resource scores); host ports are a set, so removing one
  of two pods that declare a port frees it;
* image states: for each image name, the nodes that report it (``status.images`` or the
  image reporter's annotation, the newer one) and its size, the size
  being the one reported by the node whose addition made the name known, kept while any
  node reports it (later reports, even by that node, do not change it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Which report of a node's images counts (the kubelet's or the image reporter's) is input
# reading, shared with the state rather than re-derived: the oracle checks the score.
from kubesalvo.core.plugins.image_locality import node_images
from kubesalvo.core.resources import (
    HostPort,
    host_ports,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
)

__all__ = [
    "Cache",
    "ImageState",
    "NodeInfo",
    "Snapshot",
    "cache_key",
    "labels_of",
    "namespace_of",
    "pod_key",
]

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

    def set_node(self, node: Mapping[str, Any]) -> None:
        """SetNode: a new version of the node; its pods and their usage stay."""
        fresh = NodeInfo.of(node)
        self.node, self.name, self.labels = fresh.node, fresh.name, fresh.labels
        self.taints, self.unschedulable = fresh.taints, fresh.unschedulable
        self.allocatable = fresh.allocatable

    def copy(self) -> NodeInfo:
        """A copy whose pods and usage change independently (what a snapshot holds)."""
        return dataclasses.replace(
            self,
            pods=list(self.pods),
            requested=dict(self.requested),
            used_ports=set(self.used_ports),
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
        # Ports are a set upstream (HostPortInfo): removing a pod frees its ports even if
        # another pod on the node declared the same one.
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
        """The snapshot of a cache that saw ``nodes`` added in order, then ``pods``."""
        cache = Cache()
        for node in nodes:
            name = (node.get("metadata") or {}).get("name", "")
            if name in cache.nodes:
                raise ValueError("node names must be unique")
            cache.add_node(node)
        for pod in pods:
            cache.add_pod(pod)
        return cache.snapshot(namespaces, workloads)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The labels of a namespace, or None when the namespace is unknown."""
        return self.namespaces.get(namespace)


def cache_key(pod: Mapping[str, Any]) -> str:
    """How the cache tells pods apart (GetPodKey): the uid, else namespace/name."""
    return str((pod.get("metadata") or {}).get("uid") or pod_key(pod))


class Cache:
    """kube-scheduler's cache, event by event; ``snapshot()`` is what a cycle sees.

    As upstream, each node name has one NodeInfo that pods are added to and removed from
    one at a time (so host ports behave as a set over the node's history). RemoveNode
    keeps the NodeInfo while pods are on it (a "ghost", in no snapshot), and AddNode of
    the same name sets the node on it again. Present nodes are listed in the order they
    were added (a node added back after its removal comes last).
    """

    def __init__(self) -> None:
        self.nodes: dict[str, Mapping[str, Any]] = {}
        self.infos: dict[str, NodeInfo] = {}  # node name -> NodeInfo, present or ghost
        self._pods: dict[str, tuple[str, Mapping[str, Any]]] = {}  # key -> (node, pod)
        self._image_sizes: dict[str, int] = {}
        self._image_nodes: dict[str, set[str]] = {}

    def add_node(self, node: Mapping[str, Any]) -> None:
        """AddNode and UpdateNode: the node's old images go, its new ones come."""
        name = (node.get("metadata") or {}).get("name", "")
        old = self.nodes.get(name)
        if old is not None:
            self._remove_images(name, old)
        self.nodes[name] = node
        info = self.infos.get(name)
        if info is None:
            self.infos[name] = NodeInfo.of(node)
        else:
            info.set_node(node)
        for image in node_images(node):
            for image_name in image.get("names") or ():
                if image_name not in self._image_nodes:
                    self._image_sizes[image_name] = int(image.get("sizeBytes") or 0)
                    self._image_nodes[image_name] = set()
                self._image_nodes[image_name].add(name)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is None:
            return
        self._remove_images(name, node)
        if not self.infos[name].pods:
            del self.infos[name]

    def _remove_images(self, name: str, node: Mapping[str, Any]) -> None:
        for image in node_images(node):
            for image_name in image.get("names") or ():
                holders = self._image_nodes.get(image_name)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._image_nodes[image_name]
                        del self._image_sizes[image_name]

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """A bound pod added or changed (removed, then added); a finished one leaves."""
        self.remove_pod(pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in _TERMINATED:
            return
        info = self.infos.get(node_name)
        if info is None:  # a pod seen before its node: a ghost until the node comes
            info = self.infos[node_name] = NodeInfo.of({"metadata": {"name": node_name}})
        info.add_pod(pod)
        self._pods[cache_key(pod)] = (node_name, pod)

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        entry = self._pods.pop(cache_key(pod), None)
        if entry is None:
            return
        node_name, known = entry
        info = self.infos[node_name]
        info.remove_pod(known)
        if not info.pods and node_name not in self.nodes:
            del self.infos[node_name]

    def snapshot(
        self,
        namespaces: Iterable[Mapping[str, Any]] = (),
        workloads: Iterable[Mapping[str, Any]] = (),
    ) -> Snapshot:
        """The present nodes with their pods, and the image states, as a cycle sees them."""
        infos = [self.infos[name].copy() for name in self.nodes]
        return Snapshot(
            nodes=infos,
            by_name={info.name: info for info in infos},
            namespaces={
                (ns.get("metadata") or {}).get("name", ""): labels_of(ns) for ns in namespaces
            },
            node_images={
                name: frozenset(
                    image_name
                    for image in node_images(node)
                    for image_name in image.get("names") or ()
                )
                for name, node in self.nodes.items()
            },
            images={
                name: ImageState(self._image_sizes[name], len(holders))
                for name, holders in self._image_nodes.items()
            },
            workloads=list(workloads),
        )
