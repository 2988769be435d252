"""ImageLocality: nodes that already hold the pod's images score higher.

The score is kube-scheduler's, and this module holds it: each container's (and init
container's) image that a node holds adds its size scaled by the share of all nodes that
hold it (:func:`scaled_size`: an image everywhere gives no edge), and the sum, clamped to
[23 MiB, 1000 MiB x containers], maps linearly onto 0..100 (:func:`scores`). Names
without a tag mean ``:latest`` (:func:`normalized_image_name`). The score depends on no
other node, so it is a score channel of kind NONE (:data:`SCORE_CHANNEL`): the module
computes each row's final score for a class of pods (:func:`locality_scores`) and the
encoder adds it, weighted, to the class's fixed scores; classes with the same images and
container count (:func:`class_images`, the channel's key) share one row.
``core/pernode/image_locality.py`` gathers the same sums for one pod over its nodes, plainly,
and scores them with these functions. What a node holds comes from one of two reports,
whichever is newer (:func:`node_images`):

* ``status.images``, written by the kubelet (many clusters, and every kwok node, report
  none);
* the annotation :data:`ANNOTATION`, written by ``kubesalvo image-reporter`` from the
  container runtime's own list. Its value is compact JSON::

      {"v":1,"at":"2026-11-23T23:40:05Z","images":[[TAGS,DIGESTS,SIZE],...]}

  ``TAGS`` the image's repo tags (``docker.io/library/nginx:1.27``), ``DIGESTS`` its repo
  digests (``docker.io/library/nginx@sha256:...``), ``SIZE`` its size in bytes; ``at``
  when the reporter listed them (RFC 3339, UTC). As the kubelet does, an image's names are
  its digests then its tags.

"Newer": the annotation's ``at`` against the kubelet's last status report, the latest
``lastHeartbeatTime`` of the node's conditions (the kubelet writes its image list in the
same status update; a list without any heartbeat counts as older). A report that is empty
counts as absent; an annotation that does not parse is ignored (the reporter never writes
one). Equal times keep the kubelet's list. The reporter's clock is not trusted past ours: an
``at`` still in the future when the scheduler first sees the value counts as that moment,
so a skewed or lying reporter cannot outrank the kubelet's later reports for good.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    MAX_NODE_SCORE,
    SCORE,
    NodeTable,
    Normalise,
    PerNode,
    PluginSpec,
    PodClass,
    ScoreChannel,
)

__all__ = [
    "ANNOTATION",
    "FORMAT_VERSION",
    "MAX_ANNOTATION_BYTES",
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "NAME",
    "SCORE_CHANNEL",
    "ImageReport",
    "ReportedImage",
    "class_images",
    "decode_annotation",
    "encode_annotation",
    "format_time",
    "locality_scores",
    "node_images",
    "normalized_image_name",
    "scaled_size",
    "scores",
]

NAME = names.IMAGE_LOCALITY

ANNOTATION = "kubesalvo.io/images"
FORMAT_VERSION = 1
# A Node's annotations share 256 KiB (apimachinery's TotalAnnotationSizeLimitB) with
# everything else that annotates nodes; a quarter of it holds ~300 typical images.
MAX_ANNOTATION_BYTES = 64 * 1024

_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


def normalized_image_name(name: str) -> str:
    """An image name as ImageLocality compares them: ``:latest`` added when untagged."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_size(size: int, holders: int, total_nodes: int) -> int:
    """What an image adds on a node holding it: its size (the image state's: the first
    node's report) times the share of all ``total_nodes`` that hold it."""
    return int(float(size) * (float(holders) / float(total_nodes)))


def scores(sums: npt.NDArray[np.int64], containers: int) -> npt.NDArray[np.int64]:
    """Each node's score from the sum of its scaled sizes, for a pod of ``containers``
    containers and init containers (kube-scheduler's calculatePriority)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * containers
    if max_threshold <= MIN_THRESHOLD:  # no containers: every sum clamps to the minimum
        return np.zeros(len(sums), dtype=np.int64)
    clipped = np.clip(np.asarray(sums, dtype=np.int64), MIN_THRESHOLD, max_threshold)
    return MAX_NODE_SCORE * (clipped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


# Distinct image names of the pods seen, normalised (they repeat across a burst's classes).
_NORMALIZED: dict[str, str] = {}
_NORMALIZED_MAX = 65_536


def class_images(args: None, nodes: NodeTable, pod: PodClass) -> tuple[list[str], int]:
    """What the score reads of a class: its containers' and init containers' image names,
    normalised, and how many containers (and init containers) it has (the thresholds scale
    with them). Classes that agree here get the same scores: the channel's key."""
    spec = pod.spec
    init = spec.get("initContainers")
    containers = list(spec.get("containers") or ())
    if init:
        containers = list(init) + containers
    images: list[str] = []
    for container in containers:  # a loop: this runs once per class of a burst
        image = container.get("image")
        if image:
            name = _NORMALIZED.get(image)
            if name is None:
                name = normalized_image_name(image)
                if len(_NORMALIZED) < _NORMALIZED_MAX:
                    _NORMALIZED[image] = name
            images.append(name)
    return images, len(containers)


def locality_scores(args: None, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.int64]:
    """Each row's score for the class, 0..100 and final (kube-scheduler's Score, which
    has no NormalizeScore): the scaled sizes of the class's images its node holds, summed
    and mapped by :func:`scores`."""
    images, containers = class_images(args, nodes, pod)
    sums = np.zeros(len(nodes.node_names()), dtype=np.int64)
    total_nodes = nodes.node_count()
    for image in images:
        rows, size, holders = nodes.image_rows(image)
        if holders:
            sums[rows] += scaled_size(size, holders, total_nodes)
    return scores(sums, containers)


# Final scores per node: added as they are, weighted, to the class's fixed scores.
SCORE_CHANNEL = ScoreChannel(Normalise.NONE, locality_scores, class_images)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.image_locality import PER_NODE

    return PER_NODE


SPEC = PluginSpec(NAME, frozenset({SCORE}), score_channel=SCORE_CHANNEL, per_node=_per_node)


@dataclass(frozen=True, order=True)
class ReportedImage:
    """One image the container runtime holds: its names and its size in bytes."""

    tags: tuple[str, ...]
    digests: tuple[str, ...]
    size: int

    def as_status(self) -> dict[str, Any]:
        """The image as ``status.images`` holds one (digests first, as the kubelet)."""
        return {"names": [*self.digests, *self.tags], "sizeBytes": self.size}


@dataclass(frozen=True)
class ImageReport:
    """A decoded annotation: when the images were listed, and the images."""

    at: datetime
    images: tuple[ReportedImage, ...]


def format_time(at: datetime) -> str:
    """RFC 3339 in UTC with seconds, as the API server writes timestamps."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def encode_annotation(
    images: Iterable[ReportedImage], at: datetime, limit: int = MAX_ANNOTATION_BYTES
) -> tuple[str, int]:
    """The annotation's value for ``images`` and how many images it holds.

    Largest images first (they weigh most in the score, and the kubelet keeps the largest
    too); when the value would pass ``limit`` bytes the smallest are left out.
    """
    ordered = sorted(images, key=lambda i: (-i.size, i))
    head = f'{{"v":{FORMAT_VERSION},"at":"{format_time(at)}","images":['
    parts: list[str] = []
    used = len(head) + 2
    for image in ordered:
        part = json.dumps(
            [list(image.tags), list(image.digests), image.size], separators=(",", ":")
        )
        extra = len(part.encode()) + (1 if parts else 0)
        if used + extra > limit:
            break
        parts.append(part)
        used += extra
    return head + ",".join(parts) + "]}", len(parts)


def _strings(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


def decode_annotation(text: str) -> ImageReport:
    """The report in an annotation's value; ``ValueError`` saying what is wrong."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("v") != FORMAT_VERSION:
        raise ValueError(f'not an object with "v": {FORMAT_VERSION}')
    at = _parse_time(raw.get("at"))
    if at is None:
        raise ValueError(f'"at" is not an RFC 3339 time: {raw.get("at")!r}')
    entries = raw.get("images")
    if not isinstance(entries, list):
        raise ValueError('"images" is not a list')
    images = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, list) or len(entry) != 3:
            raise ValueError(f"images[{i}] is not [tags, digests, size]")
        tags, digests, size = _strings(entry[0]), _strings(entry[1]), entry[2]
        if tags is None or digests is None:
            raise ValueError(f"images[{i}]: tags and digests must be lists of strings")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"images[{i}]: size {size!r} is not a byte count")
        images.append(ReportedImage(tags, digests, size))
    return ImageReport(at, tuple(images))


def _status_time(status: Mapping[str, Any]) -> datetime | None:
    times = [_parse_time(c.get("lastHeartbeatTime")) for c in status.get("conditions") or ()]
    known = [t for t in times if t is not None]
    return max(known) if known else None


@functools.lru_cache(maxsize=4096)
def _decoded(text: str) -> tuple[datetime, tuple[Mapping[str, Any], ...]] | None:
    # Every update of a node (a heartbeat every few seconds) carries the same annotation
    # until the reporter rewrites it: decode each distinct value once.
    try:
        report = decode_annotation(text)
    except ValueError:
        return None
    return report.at, tuple(image.as_status() for image in report.images)


# When each annotation value dated in the future was first seen (``node_images``). Bounded:
# past the bound the oldest is forgotten (seen again, it counts from then).
_FUTURE_SEEN: dict[str, datetime] = {}
_FUTURE_SEEN_MAX = 4096


def _seen_at(text: str, at: datetime, now: datetime) -> datetime:
    """``at``, but no later than when ``text`` was first seen dated in the future."""
    seen = _FUTURE_SEEN.get(text)
    if seen is None and at > now:
        if len(_FUTURE_SEEN) >= _FUTURE_SEEN_MAX:
            del _FUTURE_SEEN[next(iter(_FUTURE_SEEN))]
        seen = _FUTURE_SEEN[text] = now
    return at if seen is None else min(at, seen)


def node_images(
    node: Mapping[str, Any], now: datetime | None = None
) -> Sequence[Mapping[str, Any]]:
    """The node's images as ``status.images`` entries, from the newer of its two reports
    (read-only: the annotation's entries are shared between calls). ``now`` (default: the
    clock) caps the annotation's time (see the module docstring)."""
    status = node.get("status") or {}
    reported: Sequence[Mapping[str, Any]] = status.get("images") or ()
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not text or not isinstance(text, str):
        return reported
    decoded = _decoded(text)
    if decoded is None or not decoded[1]:
        return reported
    at, images = decoded
    at = _seen_at(text, at, now or datetime.now(UTC))
    if reported:
        kubelet_at = _status_time(status)
        if kubelet_at is not None and kubelet_at >= at:
            return reported
    return images
