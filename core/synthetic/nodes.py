"""Seeded fleets of fake nodes, as Node objects in the API server's JSON shape.

``make_nodes`` splits the fleet over the pools by their weights (largest remainder, so even a
small fleet gets its GPU and tainted nodes), spreads each pool evenly over the zones, picks a
machine shape per node, and reports capacity and allocatable the way the kubelet does
(allocatable = capacity minus the usual kube-reserved share and the eviction threshold).
Every node carries ``kwok.x-k8s.io/node: fake`` so that kwok manages it; conditions are left
to kwok. The same seed always gives the same fleet.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.gc_pause import gc_paused
from kubesalvo.core.synthetic import units
from kubesalvo.core.synthetic.catalog import (
    CAPACITY_TYPE_LABEL,
    CPU_GENERATION_LABEL,
    DEFAULT_POOLS,
    GPU,
    POOL_LABEL,
    SYSTEM_IMAGES,
    Image,
    Pool,
    Shape,
    images_of,
)

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# (type, status, reason) as kwok's node-initialize stage reports a healthy node.
_KWOK_CONDITIONS = (
    ("Ready", "True", "KubeletReady"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID"),
    ("NetworkUnavailable", "False", "RouteCreated"),
)
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class Fleet:
    """What a fleet is made of. The defaults are a typical mixed production cluster."""

    pools: tuple[Pool, ...] = DEFAULT_POOLS
    region: str = "us-east-1"
    zones: tuple[str, ...] = ("us-east-1a", "us-east-1b", "us-east-1c")
    # Share of nodes cordoned (spec.unschedulable plus the taint the node controller adds).
    cordoned_fraction: float = 0.005
    # How many workload images a node has pulled, besides the system images.
    min_images: int = 3
    max_images: int = 12


DEFAULT_FLEET = Fleet()


def apportion(total: int, weights: list[float]) -> list[int]:
    """Split ``total`` by ``weights`` with the largest-remainder method (sums to ``total``)."""
    weight_sum = sum(weights)
    if total < 0 or weight_sum <= 0:
        raise ValueError("apportion needs a non-negative total and a positive weight sum")
    exact = [total * w / weight_sum for w in weights]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _reserved_cpu_millis(cores: int) -> int:
    # GKE's kube-reserved table: 6% of the first core, 1% of the second, 0.5% of the
    # next two, 0.25% of every core above four.
    millis = cores * 1000
    reserved = 0.06 * min(millis, 1000)
    reserved += 0.01 * min(max(millis - 1000, 0), 1000)
    reserved += 0.005 * min(max(millis - 2000, 0), 2000)
    reserved += 0.0025 * max(millis - 4000, 0)
    return int(reserved)


def _reserved_memory_bytes(capacity: int) -> int:
    # GKE's kube-reserved table (25% of the first 4 GiB, 20% of the next 4, 10% of the
    # next 8, 6% of the next 112, 2% above 128 GiB) plus the 100Mi hard eviction threshold.
    gi = units.GI
    reserved = 0.25 * min(capacity, 4 * gi)
    reserved += 0.20 * min(max(capacity - 4 * gi, 0), 4 * gi)
    reserved += 0.10 * min(max(capacity - 8 * gi, 0), 8 * gi)
    reserved += 0.06 * min(max(capacity - 16 * gi, 0), 112 * gi)
    reserved += 0.02 * max(capacity - 128 * gi, 0)
    return int(reserved) + 100 * units.MI


def shape_resources(shape: Shape) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of one machine shape, as the kubelet would report them."""
    # Firmware and the kernel keep ~3.5% of the memory; the kubelet sees the rest, in Ki.
    memory = (shape.memory_gib * units.GI * 965 // 1000) // units.KI * units.KI
    disk = shape.disk_gib * units.GI
    capacity = {
        "cpu": units.cpu(shape.cpu_cores * 1000),
        "memory": units.kibibytes(memory),
        "ephemeral-storage": units.kibibytes(disk),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "pods": str(shape.max_pods),
    }
    allocatable = {
        "cpu": units.cpu(shape.cpu_cores * 1000 - _reserved_cpu_millis(shape.cpu_cores)),
        "memory": units.kibibytes(memory - _reserved_memory_bytes(memory)),
        # The kubelet reports allocatable storage in plain bytes, less the 10% nodefs threshold.
        "ephemeral-storage": str(disk - disk // 10),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "pods": str(shape.max_pods),
    }
    if shape.gpus:
        capacity[GPU] = allocatable[GPU] = str(shape.gpus)
    return capacity, allocatable


def _image_entry(image: Image) -> dict[str, Any]:
    return {"names": [image.digest_name, image.name], "sizeBytes": image.size_bytes}


# One entry per image, for fleets that share them (see make_nodes).
_SHARED_ENTRIES: dict[Image, dict[str, Any]] = {}


def _shared_image_entry(image: Image) -> dict[str, Any]:
    if image not in _SHARED_ENTRIES:
        _SHARED_ENTRIES[image] = _image_entry(image)
    return _SHARED_ENTRIES[image]


def _pool_nodes(
    rng: random.Random,
    pool: Pool,
    count: int,
    first_zone: int,
    fleet: Fleet,
    name_width: int,
    shared_images: bool,
) -> list[dict[str, Any]]:
    entry = _shared_image_entry if shared_images else _image_entry
    shapes = [shape for shape, _ in pool.shapes]
    cum_weights: list[float] = []
    running = 0.0
    for _, weight in pool.shapes:
        running += weight
        cum_weights.append(running)
    resources = {shape: shape_resources(shape) for shape in shapes}
    candidates = images_of(pool.image_families)
    max_images = min(fleet.max_images, len(candidates))
    min_images = min(fleet.min_images, max_images)
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
    nodes = []
    for index in range(count):
        shape = rng.choices(shapes, cum_weights=cum_weights)[0]
        zone = fleet.zones[(first_zone + index) % len(fleet.zones)]
        name = f"{pool.name}-{index:0{name_width}d}"
        labels = {
            "beta.kubernetes.io/arch": shape.arch,
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": shape.arch,
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": shape.instance_type,
            "topology.kubernetes.io/region": fleet.region,
            "topology.kubernetes.io/zone": zone,
            POOL_LABEL: pool.name,
            CAPACITY_TYPE_LABEL: pool.capacity_type,
            CPU_GENERATION_LABEL: str(shape.cpu_generation),
            "type": "kwok",
        }
        labels.update(pool.extra_labels)
        if shape.gpus:
            labels["nvidia.com/gpu.product"] = shape.gpu_product
            labels["nvidia.com/gpu.count"] = str(shape.gpus)
        pulled = rng.sample(candidates, rng.randint(min_images, max_images))
        images = [entry(image) for image in SYSTEM_IMAGES]
        images.extend(entry(image) for image in pulled)
        # The kubelet lists images largest first.
        images.sort(key=lambda entry: -entry["sizeBytes"])
        spec: dict[str, Any] = {}
        node_taints = [dict(t) for t in taints]
        if rng.random() < fleet.cordoned_fraction:
            spec["unschedulable"] = True
            node_taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        if node_taints:
            spec["taints"] = node_taints
        capacity, allocatable = resources[shape]
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {
                        KWOK_ANNOTATION: "fake",
                        "node.alpha.kubernetes.io/ttl": "0",
                    },
                },
                "spec": spec,
                "status": {
                    "capacity": dict(capacity),
                    "allocatable": dict(allocatable),
                    "images": images,
                    "nodeInfo": {"architecture": shape.arch, "operatingSystem": "linux"},
                },
            }
        )
    return nodes


def make_nodes(
    count: int,
    seed: int = 0,
    fleet: Fleet = DEFAULT_FLEET,
    *,
    ready: bool = False,
    shared_images: bool = False,
) -> list[dict[str, Any]]:
    """``count`` fake nodes, deterministic for ``seed``, as API server JSON dicts.

    Nodes to create on a server have no conditions: kwok sets them, and waiting for Ready
    proves that kwok manages the node. ``ready=True`` adds the conditions kwok would set
    (Ready and no pressure), for a cluster loaded in-process. Each node is a fresh dict tree
    that the caller may change freely, except with ``shared_images=True``: then the entries
    of ``status.images`` (not the lists) are one read-only dict per image for the whole
    fleet, which saves about 3 KB per node (150 MB for 50,000 nodes).
    """
    if count < 0:
        raise ValueError(f"node count must be non-negative, got {count}")
    if not fleet.pools:
        raise ValueError("a fleet needs at least one pool")
    if not fleet.zones:
        raise ValueError("a fleet needs at least one zone")
    rng = random.Random(seed)
    per_pool = apportion(count, [pool.weight for pool in fleet.pools])
    name_width = max(5, len(str(max(per_pool, default=0) - 1)))
    nodes: list[dict[str, Any]] = []
    with gc_paused():
        for pool_index, (pool, count_in_pool) in enumerate(zip(fleet.pools, per_pool, strict=True)):
            nodes.extend(
                _pool_nodes(rng, pool, count_in_pool, pool_index, fleet, name_width, shared_images)
            )
        if ready:
            for node in nodes:
                node["status"]["conditions"] = [
                    {"type": kind, "status": status, "reason": reason}
                    for kind, status, reason in _KWOK_CONDITIONS
                ]
    return nodes
