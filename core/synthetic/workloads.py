"""Named workload shapes: bursts of pending pods built from the recipes.

- ``replicasets``: ``count`` pods in ``classes`` ReplicaSet-like classes, identical pods in
  each (the shape of a Deployment rollout; 10,000 pods in 10 classes is a speed target).
- ``distinct``: every pod its own class, with its own selector, tolerations, spread
  constraint and requests (the worst case for sharing work between pods).
- ``mixed``: what a busy cluster sees: Deployment bursts with common constraints, Jobs, gangs
  (CPU and a few GPU), one-off constrained pods, GPU inference pods, and about 2% that no
  node can take.
- ``gangs``: gangs only, of 4 to 32 members, a few on GPUs and one in twenty impossible.

Classes come out in a seeded shuffled order, the replicas of a class together, as their
controllers create them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from kubesalvo.core.gc_pause import gc_paused
from kubesalvo.core.synthetic import recipes
from kubesalvo.core.synthetic.nodes import DEFAULT_FLEET, Fleet, apportion
from kubesalvo.core.synthetic.pods import PodClass
from kubesalvo.core.synthetic.recipes import Context

# A class and how many replicas of it to create.
Batch = list[tuple[PodClass, int]]

# Shares of a mixed burst, by pods. GPU work is kept near 0.6% of pods because a default
# fleet has about 0.14 GPUs per node and mixed bursts run at up to ~10 pods per node.
MIXED_SHARES: tuple[tuple[str, float], ...] = (
    ("service", 0.50),
    ("job", 0.20),
    ("gang", 0.095),
    ("constrained", 0.179),
    ("gpu", 0.006),
    ("unschedulable", 0.02),
)
SERVICE_REPLICAS = ((1, 2), (2, 2), (3, 4), (5, 3), (10, 3), (20, 2), (50, 1), (100, 1), (200, 1))
JOB_COMPLETIONS = ((1, 3), (5, 2), (10, 2), (20, 2), (50, 1), (100, 1), (500, 0.2))
GANG_SIZES = ((4, 3), (8, 3), (16, 2), (32, 1))


def _weighted(rng: random.Random, table: tuple[tuple[int, float], ...]) -> int:
    values = [value for value, _ in table]
    weights = [weight for _, weight in table]
    return rng.choices(values, weights=weights)[0]


def _fill(
    pods: int,
    sizes: tuple[tuple[int, float], ...],
    rng: random.Random,
    make: Callable[[int, int], PodClass],
) -> Batch:
    """Classes of drawn sizes until ``pods`` are used up (the last one cut to fit)."""
    batch: Batch = []
    while pods > 0:
        size = min(_weighted(rng, sizes), pods)
        batch.append((make(len(batch), size), size))
        pods -= size
    return batch


def replicasets_batch(rng: random.Random, ctx: Context, count: int, classes: int = 10) -> Batch:
    if classes < 1:
        raise ValueError(f"replicasets needs at least one class, got {classes}")
    sizes = apportion(count, [1.0] * classes)
    return [(recipes.replicaset(rng, ctx, i), n) for i, n in enumerate(sizes) if n]


def distinct_batch(rng: random.Random, ctx: Context, count: int) -> Batch:
    return [(recipes.distinct(rng, ctx, i), 1) for i in range(count)]


def gangs_batch(rng: random.Random, ctx: Context, count: int) -> Batch:
    def make(index: int, size: int) -> PodClass:
        return recipes.gang(rng, ctx, index, size, gpu=index % 10 == 3, impossible=index % 20 == 11)

    return _fill(count, GANG_SIZES, rng, make)


def mixed_batch(rng: random.Random, ctx: Context, count: int) -> Batch:
    shares = dict(
        zip(
            [name for name, _ in MIXED_SHARES],
            apportion(count, [share for _, share in MIXED_SHARES]),
            strict=True,
        )
    )
    batch: Batch = []
    batch += _fill(
        shares["service"],
        SERVICE_REPLICAS,
        rng,
        lambda i, n: recipes.service(rng, ctx, i, n),
    )
    batch += _fill(shares["job"], JOB_COMPLETIONS, rng, lambda i, n: recipes.job(rng, ctx, i))
    batch += _fill(
        shares["gang"], GANG_SIZES, rng, lambda i, n: recipes.gang(rng, ctx, i, n, gpu=False)
    )
    gpu_pods = shares["gpu"]
    gpu_gang_ctx = Context(ctx.scheduler_name, f"{ctx.prefix}gpu-", ctx.fleet)
    gang_pods = gpu_pods // 2
    batch += _fill(
        gang_pods,
        ((2, 1), (4, 1)),
        rng,
        lambda i, n: recipes.gang(rng, gpu_gang_ctx, i, n, gpu=True),
    )
    batch += [(recipes.inference(rng, ctx, i), 1) for i in range(gpu_pods - gang_pods)]
    batch += [(recipes.constrained(rng, ctx, i), 1) for i in range(shares["constrained"])]
    stuck = shares["unschedulable"]
    impossible_gang = stuck // 10 if stuck >= 20 else 0
    if impossible_gang:
        stuck_ctx = Context(ctx.scheduler_name, f"{ctx.prefix}stuck-", ctx.fleet)
        batch.append(
            (recipes.gang(rng, stuck_ctx, 0, impossible_gang, gpu=True, impossible=True),
             impossible_gang)
        )  # fmt: skip
    batch += [(recipes.unschedulable(rng, ctx, i), 1) for i in range(stuck - impossible_gang)]
    rng.shuffle(batch)
    return batch


SHAPES: dict[str, Callable[..., Batch]] = {
    "replicasets": replicasets_batch,
    "distinct": distinct_batch,
    "mixed": mixed_batch,
    "gangs": gangs_batch,
}


def make_batch(
    count: int,
    seed: int = 0,
    shape: str = "mixed",
    *,
    classes: int = 10,
    scheduler_name: str = "kubesalvo",
    prefix: str = "",
    fleet: Fleet = DEFAULT_FLEET,
) -> Batch:
    """The classes of a burst and their replica counts, without building the pods."""
    if count < 0:
        raise ValueError(f"pod count must be non-negative, got {count}")
    if shape not in SHAPES:
        raise ValueError(f"unknown workload shape {shape!r}; accepted: {', '.join(SHAPES)}")
    rng = random.Random(seed)
    ctx = Context(scheduler_name, prefix, fleet)
    if shape == "replicasets":
        return replicasets_batch(rng, ctx, count, classes)
    return SHAPES[shape](rng, ctx, count)


def make_pods(
    count: int,
    seed: int = 0,
    shape: str = "mixed",
    *,
    classes: int = 10,
    scheduler_name: str = "kubesalvo",
    prefix: str = "",
    fleet: Fleet = DEFAULT_FLEET,
) -> list[dict[str, Any]]:
    """``count`` pending pods of the named shape, deterministic for ``seed``.

    Replicas of one class share the nested parts of their spec (see ``pods``): treat
    containers, affinity, tolerations, nodeSelector and spread constraints as read-only.
    ``prefix`` keeps names and app labels apart when one cluster holds several bursts.
    """
    pods: list[dict[str, Any]] = []
    with gc_paused():
        batch = make_batch(
            count,
            seed,
            shape,
            classes=classes,
            scheduler_name=scheduler_name,
            prefix=prefix,
            fleet=fleet,
        )
        for pod_class, replicas in batch:
            pods.extend(pod_class.replicas(replicas))
    return pods
