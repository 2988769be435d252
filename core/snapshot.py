"""Cluster snapshots: the scheduling-relevant part of a cluster as versioned msgpack.

A snapshot is one msgpack map::

    {"format": "kubesalvo-snapshot", "version": 4, "created": "<RFC 3339 time>",
     "source": "<free text>", "nodes": [...], "pods": [...], "namespaces": [...],
     "priorityclasses": [...], "workloads": [...], "omitted": [...], "storage": {...},
     "devices": {...}}

Objects keep the API server's JSON shape, cut down by ``strip`` to the fields a scheduler
reads, so the same code reads a snapshot, a synthetic cluster and a live watch. Pods with a
``spec.nodeName`` are running load; the others are the pending burst. ``loads`` refuses
anything that is not such a map, naming the first field that is wrong. File access lives in
``kubesalvo.sched.snapshot.files``; this module only turns objects into bytes and back.

Version 2 added ``workloads``: the Services, ReplicationControllers, ReplicaSets and
StatefulSets (kind, apiVersion, namespace, name, uid and selector only) from which
PodTopologySpread's default constraints take their selector, and ``omitted``: the
resources (``services``, ...) the recorder was not allowed to list, so that a reader
knows the workloads are partial. A version 1 snapshot has neither: it reads as a cluster
without workloads.

Version 3 added ``storage``: the volume filters' objects by kind (PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, as the
storage informers decode them), and pods keep their claim and disk volumes, so what-if
answers hold for stateful pods; ``omitted`` may name those kinds too. Older snapshots read
as clusters without storage objects.

Version 4 added ``devices``: DynamicResources' objects by kind (DeviceClasses,
ResourceClaims, ResourceSlices, as its informers decode them), and pods keep their
``resourceClaims`` and ``resourceClaimStatuses``, so what-if answers hold for pods with
device claims; ``omitted`` may name those kinds too (a cluster without resource.k8s.io/v1
or credentials that may not list it). Older snapshots read as clusters without devices.
"""

from __future__ import annotations

import datetime
import gc
from dataclasses import dataclass, field
from typing import Any

import msgpack

from kubesalvo.core.plugins.image_locality import ANNOTATION as IMAGES_ANNOTATION
from kubesalvo.core.volumes import KINDS as STORAGE_KINDS
from kubesalvo.core.volumes import NAMESPACED

FORMAT = "kubesalvo-snapshot"
VERSION = 4
KINDS = ("nodes", "pods", "namespaces", "priorityclasses", "workloads")
# DynamicResources' objects (resource.k8s.io/v1), by resource name; claims are namespaced.
DEVICE_KINDS = ("deviceclasses", "resourceclaims", "resourceslices", "resourceclaimtemplates")
# The sections each version holds besides the header (3: the volume filters' objects,
# 4: DynamicResources' objects).
_SECTIONS = {
    1: KINDS[:4],
    2: (*KINDS, "omitted"),
    3: (*KINDS, "omitted", "storage"),
    4: (*KINDS, "omitted", "storage", "devices"),
}
# Each workload kind with its apiVersion, whether its selector is a plain map (Service,
# ReplicationController) or a LabelSelector, and its resource name in the API.
WORKLOAD_KINDS: dict[str, tuple[str, bool, str]] = {
    "Service": ("v1", True, "services"),
    "ReplicationController": ("v1", True, "replicationcontrollers"),
    "ReplicaSet": ("apps/v1", False, "replicasets"),
    "StatefulSet": ("apps/v1", False, "statefulsets"),
}

Object = dict[str, Any]


class SnapshotError(ValueError):
    """The bytes are not a snapshot this version of kubesalvo can read."""


@dataclass
class Snapshot:
    nodes: list[Object]
    pods: list[Object]
    namespaces: list[Object] = field(default_factory=list)
    priorityclasses: list[Object] = field(default_factory=list)
    # Services, ReplicationControllers, ReplicaSets, StatefulSets: default spreading's
    # selectors (``place_burst(workloads=...)``).
    workloads: list[Object] = field(default_factory=list)
    # Resources whose objects are missing because the recorder could not list them
    # ("services", "replicasets", ...): the workloads above are then partial.
    omitted: list[str] = field(default_factory=list)
    # The volume filters' objects by kind (core/volumes.KINDS: persistentvolumeclaims,
    # persistentvolumes, storageclasses, csinodes, csidrivers, csistoragecapacities).
    storage: dict[str, list[Object]] = field(default_factory=dict)
    # DynamicResources' objects by kind (DEVICE_KINDS).
    devices: dict[str, list[Object]] = field(default_factory=dict)
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
        "workloads": snapshot.workloads,
        "omitted": snapshot.omitted,
        "storage": snapshot.storage,
        "devices": snapshot.devices,
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


def _check_string_map(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise SnapshotError(f"{where}: expected a map of strings, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise SnapshotError(f"{where}.{key}: expected a string, got {type(item).__name__}")


def _check_label_selector(selector: Any, where: str) -> None:
    if not isinstance(selector, dict):
        raise SnapshotError(f"{where}: expected a label selector map")
    unknown = sorted(set(selector) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise SnapshotError(
            f"{where}.{unknown[0]}: unknown field; accepted: matchLabels, matchExpressions"
        )
    if selector.get("matchLabels") is not None:
        _check_string_map(selector["matchLabels"], f"{where}.matchLabels")
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return
    if not isinstance(expressions, list):
        raise SnapshotError(f"{where}.matchExpressions: expected a list")
    for index, expression in enumerate(expressions):
        at = f"{where}.matchExpressions[{index}]"
        if not isinstance(expression, dict):
            raise SnapshotError(f"{at}: expected a map, got {type(expression).__name__}")
        for text_field in ("key", "operator"):
            if not isinstance(expression.get(text_field), str):
                raise SnapshotError(f"{at}.{text_field}: missing or not a string")
        values = expression.get("values")
        if values is not None and (
            not isinstance(values, list) or not all(isinstance(v, str) for v in values)
        ):
            raise SnapshotError(f"{at}.values: expected a list of strings")


def _check_workloads(document: dict[str, Any]) -> list[Object]:
    """The workloads section: each one's kind, apiVersion, identity and selector shape."""
    workloads = _check_objects(document, "workloads", namespaced=True)
    for index, workload in enumerate(workloads):
        where = f"workloads[{index}]"
        kind = workload.get("kind")
        if kind not in WORKLOAD_KINDS:
            raise SnapshotError(
                f"{where}.kind: expected one of {', '.join(WORKLOAD_KINDS)}, got {kind!r}"
            )
        api_version, plain, _ = WORKLOAD_KINDS[kind]
        if workload.get("apiVersion") != api_version:
            raise SnapshotError(
                f"{where}.apiVersion: a {kind} is {api_version!r}, "
                f"got {workload.get('apiVersion')!r}"
            )
        if not isinstance(workload["metadata"].get("uid", ""), str):
            raise SnapshotError(f"{where}.metadata.uid: expected a string")
        spec = workload.get("spec", {})
        if not isinstance(spec, dict):
            raise SnapshotError(f"{where}.spec: expected a map, got {type(spec).__name__}")
        selector = spec.get("selector")
        if selector is None:
            continue
        if plain:
            _check_string_map(selector, f"{where}.spec.selector")
        else:
            _check_label_selector(selector, f"{where}.spec.selector")
    return workloads


def _check_storage(document: dict[str, Any]) -> dict[str, list[Object]]:
    storage = document.get("storage", {})
    if not isinstance(storage, dict):
        raise SnapshotError(f"storage: expected a map, got {type(storage).__name__}")
    out: dict[str, list[Object]] = {}
    for kind, objects in storage.items():
        if kind not in STORAGE_KINDS:
            raise SnapshotError(
                f"storage.{kind}: unknown kind; accepted: {', '.join(STORAGE_KINDS)}"
            )
        out[kind] = _check_objects(
            {f"storage.{kind}": objects}, f"storage.{kind}", namespaced=kind in NAMESPACED
        )
    return out


def _check_devices(document: dict[str, Any]) -> dict[str, list[Object]]:
    devices = document.get("devices", {})
    if not isinstance(devices, dict):
        raise SnapshotError(f"devices: expected a map, got {type(devices).__name__}")
    out: dict[str, list[Object]] = {}
    for kind, objects in devices.items():
        if kind not in DEVICE_KINDS:
            raise SnapshotError(
                f"devices.{kind}: unknown kind; accepted: {', '.join(DEVICE_KINDS)}"
            )
        out[kind] = _check_objects(
            {f"devices.{kind}": objects},
            f"devices.{kind}",
            namespaced=kind in ("resourceclaims", "resourceclaimtemplates"),
        )
        for index, obj in enumerate(out[kind]):
            for part in ("spec", "status"):
                if not isinstance(obj.get(part, {}), dict):
                    raise SnapshotError(f"devices.{kind}[{index}].{part}: expected a map")
    return out


def _check_omitted(document: dict[str, Any]) -> list[str]:
    omitted = document.get("omitted", [])
    accepted = [resource for _, _, resource in WORKLOAD_KINDS.values()]
    accepted += [*STORAGE_KINDS, *DEVICE_KINDS]
    if not isinstance(omitted, list):
        raise SnapshotError(f"omitted: expected a list, got {type(omitted).__name__}")
    for index, resource in enumerate(omitted):
        if resource not in accepted:
            raise SnapshotError(
                f"omitted[{index}]: expected one of {', '.join(accepted)}, got {resource!r}"
            )
    return omitted


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
    sections = _SECTIONS[version]
    unknown = sorted(set(document) - {"format", "version", "created", "source", *sections})
    if unknown:
        raise SnapshotError(
            f"{unknown[0]}: unknown field in a version {version} snapshot; "
            f"accepted: {', '.join(sections)}"
        )
    return Snapshot(
        nodes=_check_objects(document, "nodes", namespaced=False),
        pods=_check_objects(document, "pods", namespaced=True),
        namespaces=_check_objects(document, "namespaces", namespaced=False),
        priorityclasses=_check_objects(document, "priorityclasses", namespaced=False),
        workloads=_check_workloads(document),
        omitted=_check_omitted(document),
        storage=_check_storage(document),
        devices=_check_devices(document),
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
    "resourceClaims",
)  # fmt: skip
_CONTAINER = ("name", "image", "resources", "ports", "restartPolicy")
_VOLUME = (
    "name", "persistentVolumeClaim", "ephemeral", "csi", "gcePersistentDisk",
    "awsElasticBlockStore", "rbd", "iscsi",
)  # fmt: skip


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
    volumes = [
        _pick(v, _VOLUME) for v in source_spec.get("volumes") or () if set(v) & set(_VOLUME[1:])
    ]
    if volumes:  # the volume filters read claims and disks; other sources are left out
        spec["volumes"] = volumes
    result: Object = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    status = _pick(pod.get("status", {}), ("phase", "nominatedNodeName", "resourceClaimStatuses"))
    if status:
        result["status"] = status
    return result


def strip_node(node: Object) -> Object:
    """The fields of a Node that scheduling reads (labels, taints, capacity, images, Ready)."""
    source_meta = node.get("metadata", {})
    metadata = _pick(source_meta, ("name", "uid", "labels"))
    # The image reporter's annotation, and the heartbeat that dates the kubelet's list:
    # ImageLocality reads the newer of the two.
    reported = (source_meta.get("annotations") or {}).get(IMAGES_ANNOTATION)
    if reported:
        metadata["annotations"] = {IMAGES_ANNOTATION: reported}
    spec = _pick(node.get("spec", {}), ("unschedulable", "taints"))
    source_status = node.get("status", {})
    status = _pick(source_status, ("capacity", "allocatable", "images"))
    conditions = [
        _pick(c, ("type", "status", "lastHeartbeatTime"))
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


def strip_workload(workload: Object) -> Object:
    """Kind, apiVersion, namespace, name, uid and selector: what default spreading reads of
    a Service, ReplicationController, ReplicaSet or StatefulSet (``kind`` must be set; list
    items from the API server carry none)."""
    kind = workload.get("kind")
    if kind not in WORKLOAD_KINDS:
        raise ValueError(f"kind: workloads are {', '.join(WORKLOAD_KINDS)}, not {kind!r}")
    metadata = _pick(workload.get("metadata", {}), ("name", "namespace", "uid"))
    result: Object = {"apiVersion": WORKLOAD_KINDS[kind][0], "kind": kind, "metadata": metadata}
    # Kept as listed, even when empty: an empty LabelSelector selects every pod, where a
    # missing one (or a Service without selector) selects none.
    selector = (workload.get("spec") or {}).get("selector")
    result["spec"] = {} if selector is None else {"selector": selector}
    return result


_STRIPPERS = {
    "Pod": strip_pod,
    "Node": strip_node,
    "Namespace": strip_namespace,
    "PriorityClass": strip_priority_class,
    **dict.fromkeys(WORKLOAD_KINDS, strip_workload),
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
    workloads: list[Object] | None = None,
    *,
    storage: dict[str, list[Object]] | None = None,
    devices: dict[str, list[Object]] | None = None,
    omitted: list[str] | None = None,
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
        workloads=[strip_workload(w) for w in workloads or []],
        omitted=list(omitted or []),
        storage=dict(storage or {}),
        devices=dict(devices or {}),
        created=created,
        source=source,
    )
