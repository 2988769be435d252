"""The static catalogue the generators draw from: machine shapes, node pools and images.

Shapes follow common cloud instance types, so the fleet has the mix of sizes, cpu/memory
ratios and pod limits that a scheduler meets in practice. Everything here is plain immutable
data; the generators choose from it with a seeded random source.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

from kubesalvo.core.synthetic.units import GI, MI

GPU = "nvidia.com/gpu"
POOL_LABEL = "kubesalvo.io/pool"
CAPACITY_TYPE_LABEL = "kubesalvo.io/capacity-type"
# A numeric label, so that workloads can use the Gt and Lt operators against it.
CPU_GENERATION_LABEL = "kubesalvo.io/cpu-generation"


@dataclass(frozen=True)
class Shape:
    """A machine type: what the hardware offers before the kubelet reserves its share."""

    instance_type: str
    cpu_cores: int
    memory_gib: int
    max_pods: int
    arch: str = "amd64"
    gpus: int = 0
    gpu_product: str = ""
    disk_gib: int = 100
    cpu_generation: int = 5


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Pool:
    """A group of like nodes: the shapes it uses (with weights), its taints and share."""

    name: str
    weight: float
    shapes: tuple[tuple[Shape, float], ...]
    taints: tuple[Taint, ...] = ()
    capacity_type: str = "on-demand"
    # Image families this pool's nodes tend to have pulled (see IMAGES).
    image_families: tuple[str, ...] = ("app",)
    extra_labels: tuple[tuple[str, str], ...] = field(default=())


M5_XLARGE = Shape("m5.xlarge", 4, 16, 58)
M5_2XLARGE = Shape("m5.2xlarge", 8, 32, 58)
M5_4XLARGE = Shape("m5.4xlarge", 16, 64, 110)
M5_8XLARGE = Shape("m5.8xlarge", 32, 128, 110)
C5_2XLARGE = Shape("c5.2xlarge", 8, 16, 58, cpu_generation=5)
C6I_4XLARGE = Shape("c6i.4xlarge", 16, 32, 110, cpu_generation=6)
R5_2XLARGE = Shape("r5.2xlarge", 8, 64, 58)
R5_4XLARGE = Shape("r5.4xlarge", 16, 128, 110)
R6I_8XLARGE = Shape("r6i.8xlarge", 32, 256, 110, cpu_generation=6)
M6G_2XLARGE = Shape("m6g.2xlarge", 8, 32, 58, arch="arm64", cpu_generation=6)
M6G_4XLARGE = Shape("m6g.4xlarge", 16, 64, 110, arch="arm64", cpu_generation=6)
P3_8XLARGE = Shape(
    "p3.8xlarge",
    32,
    244,
    110,
    gpus=4,
    gpu_product="Tesla-V100-SXM2-16GB",
    disk_gib=200,
    cpu_generation=4,
)
G5_12XLARGE = Shape(
    "g5.12xlarge",
    48,
    192,
    110,
    gpus=4,
    gpu_product="NVIDIA-A10G",
    disk_gib=200,
    cpu_generation=6,
)
G5_2XLARGE = Shape(
    "g5.2xlarge", 8, 32, 58, gpus=1, gpu_product="NVIDIA-A10G", disk_gib=200, cpu_generation=6
)

GPU_TAINT = Taint("dedicated", "gpu", "NoSchedule")
INFRA_TAINT = Taint("dedicated", "infra", "NoSchedule")
SPOT_TAINT = Taint("spot", "true", "PreferNoSchedule")

DEFAULT_POOLS: tuple[Pool, ...] = (
    Pool(
        "general",
        0.50,
        ((M5_XLARGE, 0.2), (M5_2XLARGE, 0.35), (M5_4XLARGE, 0.3), (M5_8XLARGE, 0.15)),
    ),
    Pool("compute", 0.10, ((C5_2XLARGE, 0.5), (C6I_4XLARGE, 0.5))),
    Pool("memory", 0.12, ((R5_2XLARGE, 0.4), (R5_4XLARGE, 0.4), (R6I_8XLARGE, 0.2))),
    Pool(
        "spot",
        0.15,
        ((M5_2XLARGE, 0.5), (M5_4XLARGE, 0.5)),
        taints=(SPOT_TAINT,),
        capacity_type="spot",
    ),
    Pool("arm", 0.05, ((M6G_2XLARGE, 0.6), (M6G_4XLARGE, 0.4))),
    Pool(
        "gpu",
        0.05,
        ((G5_2XLARGE, 0.4), (G5_12XLARGE, 0.4), (P3_8XLARGE, 0.2)),
        taints=(GPU_TAINT,),
        image_families=("app", "ml"),
    ),
    Pool(
        "infra",
        0.03,
        ((M5_2XLARGE, 1.0),),
        taints=(INFRA_TAINT,),
        image_families=("app", "infra"),
    ),
)


@dataclass(frozen=True)
class Image:
    """A container image as nodes report it: a tag, a digest reference and a size."""

    name: str
    size_bytes: int
    family: str

    @functools.cached_property
    def digest_name(self) -> str:
        # Nodes list the digest reference first; the digest only needs to be stable.
        repo = self.name.rsplit(":", 1)[0]
        return f"{repo}@sha256:{hashlib.sha256(self.name.encode()).hexdigest()}"


# Present on every node (the kubelet's sandbox image and the node agents of a typical fleet).
SYSTEM_IMAGES: tuple[Image, ...] = (
    Image("registry.k8s.io/pause:3.10", 320_368, "system"),
    Image("registry.k8s.io/kube-proxy:v1.34.4", 30_843_136, "system"),
    Image("docker.io/fluent/fluent-bit:3.1.9", 40_214_892, "system"),
    Image("quay.io/prometheus/node-exporter:v1.8.2", 11_543_204, "system"),
)

# Pulled by some nodes and used by the synthetic workloads; sizes are the real order of size.
IMAGES: tuple[Image, ...] = (
    Image("docker.io/library/nginx:1.27", 72 * MI, "app"),
    Image("docker.io/library/redis:7.4", 45 * MI, "app"),
    Image("docker.io/library/postgres:16.4", 160 * MI, "app"),
    Image("docker.io/library/python:3.11-slim", 54 * MI, "app"),
    Image("docker.io/library/node:20-alpine", 48 * MI, "app"),
    Image("docker.io/library/golang:1.23", 318 * MI, "app"),
    Image("docker.io/library/openjdk:21-jdk-slim", 225 * MI, "app"),
    Image("docker.io/library/busybox:1.36", 2 * MI, "app"),
    Image("docker.io/library/memcached:1.6", 33 * MI, "app"),
    Image("docker.io/library/rabbitmq:3.13", 110 * MI, "app"),
    Image("docker.io/bitnami/kafka:3.8", 290 * MI, "app"),
    Image("docker.io/elastic/elasticsearch:8.15.0", 640 * MI, "app"),
    Image("ghcr.io/example/api-gateway:2.4.1", 95 * MI, "app"),
    Image("ghcr.io/example/checkout:1.19.0", 120 * MI, "app"),
    Image("ghcr.io/example/catalog:3.2.7", 140 * MI, "app"),
    Image("ghcr.io/example/batch-etl:0.9.3", 410 * MI, "app"),
    Image("ghcr.io/example/web-frontend:5.0.2", 88 * MI, "app"),
    Image("ghcr.io/example/search-indexer:1.4.0", 260 * MI, "app"),
    Image("nvcr.io/nvidia/pytorch:24.08-py3", 9 * GI, "ml"),
    Image("nvcr.io/nvidia/tritonserver:24.08-py3", 7 * GI, "ml"),
    Image("docker.io/tensorflow/tensorflow:2.17.0-gpu", 3 * GI, "ml"),
    Image("nvcr.io/nvidia/k8s-device-plugin:v0.16.2", 180 * MI, "ml"),
    Image("registry.k8s.io/coredns/coredns:v1.11.3", 18 * MI, "infra"),
    Image("registry.k8s.io/ingress-nginx/controller:v1.11.2", 105 * MI, "infra"),
    Image("quay.io/prometheus/prometheus:v2.54.1", 290 * MI, "infra"),
    Image("docker.io/grafana/grafana:11.2.0", 420 * MI, "infra"),
)


def images_of(families: tuple[str, ...]) -> tuple[Image, ...]:
    return tuple(image for image in IMAGES if image.family in families)
