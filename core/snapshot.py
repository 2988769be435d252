"""Cluster snapshots: the scheduling-relevant part of a cluster as versioned msgpack.

A snapshot is one msgpack map::

    {"format": "kubesalvo-snapshot", "version": 1, "created": "<RFC 3339 time>",
     "source": "<free text>", "nodes": [...], "pods": [...], "namespaces": [...],
     "priorityclasses": [...]}

Objects keep the API server's JSON shape, cut down by ``strip`` to the fields a scheduler
reads, so the same code reads a snapshot, a synthetic cluster and a live watch. Pods with a
``spec.nodeName`` are running load; the others are the pending burst. ``loads`` refuses
anything that is not such a map, naming the first field that is wrong. File access lives in
``kubesalvo.sched.snapshot``; this module only turns objects into bytes and back.
"""

from __future__ import annotations

import datetime
import gc
from dataclasses import dataclass, field
from typing import Any

import msgpack

FORMAT = "kubesalvo-snapshot"
VERSION = 1
KINDS = ("nodes", "pods", "namespaces", "priorityclasses")

Object = dict[str, Any]


class SnapshotError(ValueError):
    """The bytes are not a snapshot this version of kubesalvo can read."""


@dataclass
class Snapshot:
    nodes: list[Object]
    pods: list[Object]
    namespaces: list[Object] = field(default_factory=list)
    priorityclasses: list[Object] = field(default_factory=list)
    # RFC 3339; ``dumps`` stamps the current time when empty.
    created: str = ""
    # Where it came from, for people: "synthetic scenario default seed 1", a server URL.
    source: str = ""

    def pending_pods(self) -> list[Object]:
        return [pod for pod in self.pods if not pod.get("spec", {}).get("nodeName")]

    def bound_pods(self) -> list[Object]:
        return [pod for pod in self.pods if pod.get("spec", {}).get("nodeName")]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(snapshot: Snapshot) -> bytes:
    document = {
        "format": FORMAT,
        "version": VERSION,
        "created": snapshot.created or _now(),
        "source": snapshot.source,
        "nodes": snapshot.nodes,
        "pods": snapshot.pods,
        "namespaces": snapshot.namespaces,
        "priorityclasses": snapshot.priorityclasses,
    }
    return msgpack.packb(document, use_bin_type=True)


def _check_objects(document: dict[str, Any], kind: str, namespaced: bool) -> list[Object]:
    objects = document.get(kind, [])
    if not isinstance(objects, list):
        raise SnapshotError(f"{kind}: expected a list, got {type(objects).__name__}")
    for index, obj in enumerate(objects):
        where = f"{kind}[{index}]"
        if not isinstance(obj, dict):
            raise SnapshotError(f"{where}: expected a map, got {type(obj).__name__}")
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            raise SnapshotError(f"{where}.metadata: missing or not a map")
        if not isinstance(metadata.get("name"), str) or not metadata["name"]:
            raise SnapshotError(f"{where}.metadata.name: missing or not a string")
        if namespaced and not isinstance(metadata.get("namespace"), str):
            raise SnapshotError(f"{where}.metadata.namespace: missing or not a string")
    return objects


def loads(data: bytes) -> Snapshot:
    """Decode and validate a snapshot; ``SnapshotError`` says what is wrong and where."""
    # A large snapshot is millions of small acyclic containers; pausing the cyclic collector
    # while they are created makes decoding several times faster.
    collecting = gc.isenabled()
    gc.disable()
    try:
        document = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except (msgpack.UnpackException, ValueError, TypeError) as error:
        raise SnapshotError(
            f"not a kubesalvo snapshot: msgpack could not decode it ({error})"
        ) from error
    finally:
        if collecting:
            gc.enable()
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise SnapshotError(f"not a kubesalvo snapshot: no format: {FORMAT!r} field at the top")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SnapshotError(f"version: expected an integer, got {version!r}")
    if version > VERSION:
        raise SnapshotError(
            f"version: snapshot version {version} is newer than this kubesalvo reads ({VERSION})"
        )
    if version < 1:
        raise SnapshotError(f"version: expected 1 to {VERSION}, got {version}")
    for text_field in ("created", "source"):
        if not isinstance(document.get(text_field, ""), str):
            raise SnapshotError(f"{text_field}: expected a string")
    unknown = sorted(set(document) - {"format", "version", "created", "source", *KINDS})
    if unknown:
        raise SnapshotError(f"{unknown[0]}: unknown field; accepted: {', '.join(KINDS)}")
    return Snapshot(
        nodes=_check_objects(document, "nodes", namespaced=False),
        pods=_check_objects(document, "pods", namespaced=True),
        namespaces=_check_objects(document, "namespaces", namespaced=False),
        priorityclasses=_check_objects(document, "priorityclasses", namespaced=False),
        created=document.get("created", ""),
        source=document.get("source", ""),
    )


def _pick(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: source[key] for key in keys if source.get(key) not in (None, [], {})}


_POD_METADATA = ("name", "namespace", "uid", "labels", "creationTimestamp", "deletionTimestamp")
_POD_SPEC = (
    "nodeName", "schedulerName", "priority", "priorityClassName", "preemptionPolicy",
    "nodeSelector", "affinity", "tolerations", "topologySpreadConstraints", "schedulingGates",
    "overhead", "resources", "hostNetwork", "runtimeClassName", "restartPolicy",
)  # fmt: skip
_CONTAINER = ("name", "image", "resources", "ports", "restartPolicy")


def strip_pod(pod: Object) -> Object:
    """The fields of a Pod that scheduling reads (placement, requests, ports, priority)."""
    metadata = _pick(pod.get("metadata", {}), _POD_METADATA)
    owners = pod.get("metadata", {}).get("ownerReferences")
    if owners:
        # Default spreading and preemption group pods by their controller.
        metadata["ownerReferences"] = [
            _pick(ref, ("apiVersion", "kind", "name", "uid", "controller")) for ref in owners
        ]
    source_spec = pod.get("spec", {})
    spec = _pick(source_spec, _POD_SPEC)
    for key in ("containers", "initContainers"):
        if source_spec.get(key):
            spec[key] = [_pick(c, _CONTAINER) for c in source_spec[key]]
    result: Object = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    status = _pick(pod.get("status", {}), ("phase", "nominatedNodeName"))
    if status:
        result["status"] = status
    return result


def strip_node(node: Object) -> Object:
    """The fields of a Node that scheduling reads (labels, taints, capacity, images, Ready)."""
    metadata = _pick(node.get("metadata", {}), ("name", "uid", "labels"))
    spec = _pick(node.get("spec", {}), ("unschedulable", "taints"))
    source_status = node.get("status", {})
    status = _pick(source_status, ("capacity", "allocatable", "images"))
    conditions = [
        _pick(c, ("type", "status"))
        for c in source_status.get("conditions", [])
        if c.get("type") == "Ready"
    ]
    if conditions:
        status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def strip_namespace(namespace: Object) -> Object:
    """Name and labels: what namespaceSelector terms match on."""
    metadata = _pick(namespace.get("metadata", {}), ("name", "uid", "labels"))
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def strip_priority_class(priority_class: Object) -> Object:
    result = _pick(priority_class, ("value", "preemptionPolicy", "globalDefault"))
    result["metadata"] = _pick(priority_class.get("metadata", {}), ("name",))
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **result}


_STRIPPERS = {
    "Pod": strip_pod,
    "Node": strip_node,
    "Namespace": strip_namespace,
    "PriorityClass": strip_priority_class,
}


def strip(obj: Object) -> Object:
    """Cut an API object of a kind a snapshot holds down to its scheduling-relevant fields."""
    kind = obj.get("kind")
    if kind not in _STRIPPERS:
        raise ValueError(f"kind: snapshots hold {', '.join(_STRIPPERS)}, not {kind!r}")
    return _STRIPPERS[kind](obj)


def from_objects(
    nodes: list[Object],
    pods: list[Object],
    namespaces: list[Object] | None = None,
    priorityclasses: list[Object] | None = None,
    *,
    created: str = "",
    source: str = "",
) -> Snapshot:
    """A snapshot of full API objects (as listed from a server), stripped; finished pods,
    which hold no resources, are left out."""
    live = [
        pod for pod in pods if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return Snapshot(
        nodes=[strip_node(node) for node in nodes],
        pods=[strip_pod(pod) for pod in live],
        namespaces=[strip_namespace(ns) for ns in namespaces or []],
        priorityclasses=[strip_priority_class(pc) for pc in priorityclasses or []],
        created=created,
        source=source,
    )
