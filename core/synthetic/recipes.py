"""Recipes for the pod classes of a realistic cluster: services, jobs, gangs and odd pods.

Each recipe draws one ``PodClass`` from a seeded random source. The constraints refer only to
labels, taints and zones that ``make_nodes`` fleets have, so the pods are schedulable except
where a recipe means them not to be (``unschedulable``: too big, a missing zone, a GPU
without the toleration, a gang no node can hold).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.synthetic.catalog import (
    CAPACITY_TYPE_LABEL,
    CPU_GENERATION_LABEL,
    GPU,
    POOL_LABEL,
    SPOT_TAINT,
    Image,
    images_of,
)
from kubesalvo.core.synthetic.nodes import DEFAULT_FLEET, Fleet
from kubesalvo.core.synthetic.pods import (
    BATCH_LOW,
    CRITICAL,
    GANG_MIN_LABEL,
    GANG_NAME_LABEL,
    GANG_NAME_LABEL_X_K8S,
    GANG_PRIORITY_LABEL,
    HIGH,
    PodClass,
    container,
    name_suffix,
)
from kubesalvo.core.synthetic.terms import (
    ARCH,
    GPU_TOLERATION,
    HOSTNAME,
    INFRA_TOLERATION,
    SPOT_TOLERATION,
    ZONE,
    expression,
    pod_term,
    preferred,
    required_node_affinity,
    spread,
    toleration,
)
from kubesalvo.core.synthetic.units import GI, MI

# Requests drawn uniformly from these; repeats weight the common sizes. Most pods of a real
# cluster are small: the means (~330m, ~1Gi) let 30 pods per node fit a default fleet.
CPU_MENU = (50, 100, 100, 200, 250, 250, 500, 500, 1000)
MEMORY_MENU = (64 * MI, 128 * MI, 256 * MI, 256 * MI, 512 * MI, GI, 2 * GI, 4 * GI)
APP_NAMES = (
    "web",
    "api",
    "checkout",
    "cart",
    "search",
    "catalog",
    "auth",
    "payments",
    "inventory",
    "recommender",
    "gateway",
    "notifications",
    "profile",
    "orders",
    "shipping",
    "reviews",
)
SERVICE_NAMESPACES = ("team-a", "team-b", "team-c", "team-d", "team-e")
APP_IMAGES: tuple[Image, ...] = images_of(("app",))
ML_IMAGES: tuple[Image, ...] = images_of(("ml",))
SIDECAR_IMAGE = "docker.io/envoyproxy/envoy:v1.31.2"
INIT_IMAGE = "docker.io/library/busybox:1.36"


@dataclass(frozen=True)
class Context:
    """What every recipe needs besides the random source."""

    scheduler_name: str = "kubesalvo"
    prefix: str = ""
    fleet: Fleet = DEFAULT_FLEET


def _hash(rng: random.Random) -> str:
    return name_suffix(rng.getrandbits(48), width=10)


def _init_container(rng: random.Random) -> dict[str, Any]:
    # Half the time the init step needs more than the app (a migration or a cache warm-up),
    # which makes the pod's effective request the init container's.
    if rng.random() < 0.5:
        return container("init", INIT_IMAGE, 50, 64 * MI)
    return container("migrate", INIT_IMAGE, 1500, 3 * GI)


def replicaset(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A plain Deployment's ReplicaSet: requests, limits and half the time a soft zone spread."""
    app = f"{ctx.prefix}{APP_NAMES[index % len(APP_NAMES)]}-{index}"
    labels = {"app": app, "pod-template-hash": _hash(rng)}
    cpu = rng.choice(CPU_MENU)
    memory = rng.choice(MEMORY_MENU)
    image = rng.choice(APP_IMAGES)
    return PodClass(
        name=f"{app}-{labels['pod-template-hash']}",
        namespace=SERVICE_NAMESPACES[index % len(SERVICE_NAMESPACES)],
        labels=labels,
        containers=[
            container("app", image.name, cpu, memory, cpu_limit_millis=2 * cpu, memory_limit=memory)
        ],
        scheduler_name=ctx.scheduler_name,
        workload="replicaset",
        spread=[spread({"app": app}, ZONE)] if index % 2 == 0 else None,
    )


def service(rng: random.Random, ctx: Context, index: int, replicas: int) -> PodClass:
    """A production Deployment's ReplicaSet with the constraints services commonly carry."""
    pod_class = replicaset(rng, ctx, index)
    app = pod_class.labels["app"]
    own = {"app": app}
    if rng.random() < 0.25:
        pod_class.containers = [
            *pod_class.containers,
            container("proxy", SIDECAR_IMAGE, 100, 128 * MI, memory_limit=256 * MI),
        ]
    if rng.random() < 0.15:
        pod_class.init_containers = [_init_container(rng)]
    roll = rng.random()
    pod_class.priority_class = CRITICAL if roll < 0.05 else HIGH if roll < 0.35 else None

    spreads: list[dict[str, Any]] = []
    roll = rng.random()
    if roll < 0.15:
        spreads.append(spread(own, ZONE, 1, "DoNotSchedule"))
    elif roll < 0.25:
        zones = len(ctx.fleet.zones)
        spreads.append(spread(own, ZONE, 1, "DoNotSchedule", min_domains=zones))
    elif roll < 0.35:
        spreads.append(
            spread(own, ZONE, 1, "ScheduleAnyway", match_label_keys=["pod-template-hash"])
        )
    elif roll < 0.75:
        spreads.append(spread(own, ZONE))
    if rng.random() < 0.2:
        spreads.append(spread(own, HOSTNAME, 2))
    pod_class.spread = spreads or None

    affinity: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.10 and replicas <= 20:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(own, HOSTNAME)]
        }
    elif roll < 0.40:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": pod_term(own, HOSTNAME)}
            ]
        }
    roll = rng.random()
    if roll < 0.05:
        # Keep all replicas in one zone (a cache beside its clients); the first replica may
        # go anywhere because it matches its own term.
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(own, ZONE)]
        }
    elif roll < 0.15 and index > 0:
        peer = {"app": f"{ctx.prefix}{APP_NAMES[(index - 1) % len(APP_NAMES)]}-{index - 1}"}
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "podAffinityTerm": pod_term(
                        peer, ZONE, {"matchExpressions": [expression("tier", "Exists")]}
                    ),
                }
            ]
        }
    node_affinity: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.10:
        node_affinity.update(
            required_node_affinity([expression(POOL_LABEL, "In", ["general", "compute"])])
        )
    elif roll < 0.20:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            preferred(30, {"matchExpressions": [expression(CPU_GENERATION_LABEL, "Gt", ["5"])]})
        ]
    if rng.random() < 0.15:
        pod_class.tolerations = [SPOT_TOLERATION]
        node_affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            preferred(50, {"matchExpressions": [expression(CAPACITY_TYPE_LABEL, "In", ["spot"])]})
        )
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    pod_class.affinity = affinity or None
    if rng.random() < 0.2:
        pod_class.node_selector = {ARCH: "amd64"}
    pod_class.workload = "service"
    return pod_class


def job(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A Job's pods: batch requests, often tolerating spot nodes and preferring them."""
    name = f"{ctx.prefix}etl-{index}-{name_suffix(rng.getrandbits(24))}"
    uid = f"{rng.getrandbits(128):032x}"
    labels = {
        "batch.kubernetes.io/job-name": name,
        "job-name": name,
        "batch.kubernetes.io/controller-uid": uid,
    }
    cpu = rng.choice((500, 1000, 2000, 4000))
    memory = rng.choice((GI, 2 * GI, 4 * GI, 8 * GI))
    extra = {"ephemeral-storage": f"{rng.choice((1, 2, 5, 10))}Gi"} if rng.random() < 0.4 else None
    image = rng.choice(
        (
            "ghcr.io/example/batch-etl:0.9.3",
            "docker.io/library/python:3.11-slim",
            "docker.io/library/golang:1.23",
        )
    )
    pod_class = PodClass(
        name=name,
        namespace="batch",
        labels=labels,
        containers=[
            container("worker", image, cpu, memory, memory_limit=memory, extra_requests=extra)
        ],
        scheduler_name=ctx.scheduler_name,
        workload="job",
        restart_policy="Never",
    )
    if rng.random() < 0.3:
        pod_class.init_containers = [_init_container(rng)]
    if rng.random() < 0.5:
        pod_class.priority_class = BATCH_LOW
    if rng.random() < 0.5:
        pod_class.tolerations = [SPOT_TOLERATION]
        pod_class.affinity = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    preferred(
                        80, {"matchExpressions": [expression(CAPACITY_TYPE_LABEL, "In", ["spot"])]}
                    )
                ]
            }
        }
    elif rng.random() < 0.3:
        pod_class.affinity = {
            "nodeAffinity": required_node_affinity(
                [
                    expression(POOL_LABEL, "NotIn", ["gpu", "infra"]),
                    expression(ARCH, "In", ["amd64"]),
                ]
            )
        }
    return pod_class


def gang(
    rng: random.Random,
    ctx: Context,
    index: int,
    size: int,
    gpu: bool,
    impossible: bool = False,
) -> PodClass:
    """One gang's pods: ``podGroup``/``minAvailable`` labels, placed all-or-nothing.

    An ``impossible`` gang asks for eight GPUs per member; no machine has more than four.
    """
    name = f"{ctx.prefix}train-{index}"
    min_available = size if rng.random() < 0.7 else max(1, size * 3 // 4)
    # One gang in four is labelled the scheduler-plugins way.
    group_label = GANG_NAME_LABEL_X_K8S if index % 4 == 1 else GANG_NAME_LABEL
    labels = {group_label: name, GANG_MIN_LABEL: str(min_available), "app": name}
    if rng.random() < 0.3:
        labels[GANG_PRIORITY_LABEL] = str(rng.randint(1, 10))
    if gpu or impossible:
        image = rng.choice(ML_IMAGES).name
        worker = container(
            "trainer",
            image,
            4000,
            16 * GI,
            memory_limit=16 * GI,
            extra_requests={GPU: "8" if impossible else "1"},
        )
        tolerations: list[dict[str, Any]] | None = [GPU_TOLERATION]
    else:
        image = "ghcr.io/example/batch-etl:0.9.3"
        cpu = rng.choice((1000, 2000, 4000))
        worker = container("worker", image, cpu, 4 * GI, cpu_limit_millis=cpu, memory_limit=4 * GI)
        tolerations = [SPOT_TOLERATION] if rng.random() < 0.5 else None
    return PodClass(
        name=name,
        namespace="ml" if gpu or impossible else "batch",
        labels=labels,
        containers=[worker],
        scheduler_name=ctx.scheduler_name,
        workload="unschedulable" if impossible else "gang",
        restart_policy="Never",
        tolerations=tolerations,
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": pod_term({"app": name}, HOSTNAME)}
                ]
            }
        },
    )


def constrained(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A one-off pod with a hand-written placement: the long tail of a real cluster."""
    name = f"{ctx.prefix}pinned-{index}"
    own = {"app": name}
    cpu = rng.choice(CPU_MENU)
    memory = rng.choice(MEMORY_MENU)
    image = rng.choice(APP_IMAGES).name
    pod_class = PodClass(
        name=name,
        namespace=rng.choice(SERVICE_NAMESPACES),
        labels=own,
        containers=[container("app", image, cpu, memory)],
        scheduler_name=ctx.scheduler_name,
        workload="constrained",
    )
    kind = rng.randrange(7)
    if kind == 0:  # a memory-hungry pod for the memory-optimised pool
        pod_class.containers = [container("app", image, 2000, rng.choice((12, 16, 24)) * GI)]
        pod_class.node_selector = {POOL_LABEL: "memory"}
    elif kind == 1:  # built for arm
        pod_class.node_selector = {ARCH: "arm64"}
    elif kind == 2:  # needs a recent cpu generation, anything but spot
        pod_class.affinity = {
            "nodeAffinity": required_node_affinity(
                [
                    expression(CPU_GENERATION_LABEL, "Gt", ["5"]),
                    expression(CAPACITY_TYPE_LABEL, "NotIn", ["spot"]),
                ]
            )
        }
    elif kind == 3:  # a zone-pinned pod, or one on a labelled GPU product (either term)
        zone = rng.choice(ctx.fleet.zones)
        pod_class.affinity = {
            "nodeAffinity": required_node_affinity(
                [expression(ZONE, "In", [zone])],
                [expression("nvidia.com/gpu.product", "Exists")],
            )
        }
        pod_class.tolerations = [GPU_TOLERATION]
    elif kind == 4:  # an infra agent with a host port and the infra toleration
        pod_class.containers = [container("agent", image, cpu, memory, host_port=9000 + index % 50)]
        pod_class.tolerations = [INFRA_TOLERATION]
        pod_class.priority_class = CRITICAL
        pod_class.namespace = "infra"
    elif kind == 5:  # keep away from frontend pods of any namespace labelled frontend
        pod_class.affinity = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    pod_term(
                        {"app": f"{ctx.prefix}web-0"},
                        HOSTNAME,
                        {"matchLabels": {"tier": "frontend"}},
                    )
                ]
            }
        }
    else:  # tolerates everything that only discourages, and NoExecute for a while
        pod_class.tolerations = [
            toleration(SPOT_TAINT.key, None, None),
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ]
    return pod_class


def inference(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A model server on one GPU, preferring the A10G nodes."""
    name = f"{ctx.prefix}infer-{index}"
    image = rng.choice(ML_IMAGES).name
    product = expression("nvidia.com/gpu.product", "In", ["NVIDIA-A10G"])
    return PodClass(
        name=name,
        namespace="ml",
        labels={"app": name},
        containers=[container("infer", image, 2000, 8 * GI, extra_requests={GPU: "1"})],
        scheduler_name=ctx.scheduler_name,
        workload="inference",
        tolerations=[GPU_TOLERATION],
        priority_class=HIGH,
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    preferred(60, {"matchExpressions": [product]})
                ]
            }
        },
    )


def unschedulable(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A pod that no ``make_nodes`` fleet can take, each for a different reason."""
    name = f"{ctx.prefix}stuck-{index}"
    image = rng.choice(APP_IMAGES).name
    pod_class = PodClass(
        name=name,
        namespace=rng.choice(SERVICE_NAMESPACES),
        labels={"app": name},
        containers=[container("app", image, 500, GI)],
        scheduler_name=ctx.scheduler_name,
        workload="unschedulable",
    )
    kind = index % 4
    if kind == 0:  # larger than the largest machine
        pod_class.containers = [container("app", image, 96_000, 512 * GI)]
    elif kind == 1:  # a zone the fleet does not have
        pod_class.node_selector = {ZONE: f"{ctx.fleet.region}z"}
    elif kind == 2:  # wants a GPU but does not tolerate the GPU pool's taint
        pod_class.containers = [container("app", image, 1000, 2 * GI, extra_requests={GPU: "1"})]
    else:  # needs eight GPUs on one node; no machine has more than four
        pod_class.containers = [container("app", image, 1000, 2 * GI, extra_requests={GPU: "8"})]
        pod_class.tolerations = [GPU_TOLERATION]
    return pod_class


def distinct(rng: random.Random, ctx: Context, index: int) -> PodClass:
    """A pod whose selectors, tolerations, spread and requests are its own."""
    name = f"{ctx.prefix}solo-{index}"
    own = {"app": name}
    cpu = 100 + rng.randrange(900)
    memory = (64 + rng.randrange(960)) * MI
    choice = rng.randrange(4)
    if choice == 0:
        selector = {ZONE: rng.choice(ctx.fleet.zones)}
    elif choice == 1:
        selector = {POOL_LABEL: rng.choice(("general", "compute", "memory"))}
    elif choice == 2:
        selector = {ARCH: "amd64"}
    else:
        selector = {CAPACITY_TYPE_LABEL: rng.choice(("on-demand", "spot"))}
    tolerations = [toleration(f"example.com/team-{index}", None, "NoSchedule")]
    if rng.random() < 0.5:
        tolerations.append(SPOT_TOLERATION)
    return PodClass(
        name=name,
        namespace=SERVICE_NAMESPACES[index % len(SERVICE_NAMESPACES)],
        labels=own,
        containers=[container("app", rng.choice(APP_IMAGES).name, cpu, memory)],
        scheduler_name=ctx.scheduler_name,
        workload="distinct",
        node_selector=selector,
        tolerations=tolerations,
        spread=[
            spread(
                own,
                rng.choice((ZONE, HOSTNAME)),
                rng.randint(1, 3),
                rng.choice(("ScheduleAnyway", "DoNotSchedule")),
            )
        ],
    )
