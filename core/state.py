"""ClusterState: the scheduler's picture of every node, as numpy columns the kernels read.

One row per node. Rows of deleted nodes are reused, and every array grows by doubling, so
adding, updating or removing a node or a pod touches one row (amortised O(1) in the number
of nodes). The layout (all arrays have ``capacity`` rows; only rows below ``rows`` are ever
used, and ``present`` says which of them hold a node):

* ``allocatable``/``requested`` (rows x resources, int64): cpu in millicores, memory,
  ephemeral-storage and hugepages in bytes, pods and extended resources in counts. Columns
  0-3 are cpu, memory, ephemeral-storage, pods; every other resource gets its own column the
  first time a node or pod names it. ``requested[:, PODS]`` is the number of pods on the node.
* ``nonzero_requested`` (rows x 2, int64): cpu/memory as the resource scores see them (a
  container naming no cpu/memory counts 100m/200Mi).
* ``unschedulable``/``ready`` (uint8 flags).
* Labels: for each label key an int32 column of value ids (-1 = the node lacks the key);
  value ids are interned per key. The same column is the topology domain id of that key, so
  spread and inter-pod terms need no separate table. (This replaces the key=value bitsets
  of DESIGN.md: selectors become ``np.isin`` over one column, and domains come for free.)
* Taints: interned (key, value, effect); ``taints`` (rows x distinct taints, uint8).
* Images, as the scheduler cache's image states: per image name, the rows that report it
  (in ``status.images`` or the image reporter's annotation, whichever is newer:
  ``core/plugins/image_locality.py``),
  each with the image's one size. That size is the one reported by the node that made the
  name known; it stays while any node still reports the name (later nodes, and updates of
  the node that set it, do not change it) and goes with the last such node.
* Host ports in use: per row, a set of (ip, protocol, port) kept as a dict whose values are
  all 1 (the kernel reads it as counts). It is a set upstream too, so removing one of two
  pods that declare the same port frees the port.
* Pods: per row, Python dictionaries (changed one pod at a time); pods are also grouped by
  (namespace, labels) with per-row counts, so that counting the pods that match a selector
  per node touches each distinct label set once, not each pod. A group goes when its last
  pod does (label sets unique to a pod, such as a Job's or a gang's, would otherwise pile
  up); its id is reused, with an empty group in its place meanwhile.
* Pods of absent nodes ("ghosts", as upstream's cache keeps them): a pod bound to a node
  that is not (or no longer) known is remembered under the node's name but counts nowhere
  (not in ``pods``, no row); when a node of that name is added its pods count again. A node
  removed while pods are still on it keeps them this way until their own deletions arrive.
  Its set of host ports is kept too, and changed by its pods' comings and goings, as
  upstream's NodeInfo outlives the Node: it is the row's set when the node comes back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _codes, _typedefs
from kubesalvo.core.plugins.image_locality import node_images, normalized_image_name
from kubesalvo.core.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    HostPort,
    host_ports,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
)
from kubesalvo.core.volumes import StorageObjects

__all__ = ["ClusterState", "PodRecord", "normalized_image_name", "pod_key"]

FIXED_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
POD_COLUMN = _codes.POD_COLUMN
_INITIAL_ROWS = 64

Labels = tuple[tuple[str, str], ...]


def pod_key(pod: Mapping[str, Any]) -> str:
    """The identity of a pod in the state: its uid, or namespace/name when it has none."""
    meta = pod.get("metadata") or {}
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


@dataclass(slots=True)
class PodRecord:
    """What the state remembers of a pod on a node, to undo it exactly on removal."""

    row: int  # -1 while the pod is a ghost of an absent node
    namespace: str
    labels: Labels
    requests: dict[int, int]  # column -> amount
    nonzero: tuple[int, int]  # (cpu millicores, memory bytes) for scoring
    ports: list[HostPort]
    group: int  # id of its (namespace, labels) group
    affinity: Mapping[str, Any] | None  # spec.affinity when it has pod (anti-)affinity
    assumed: bool = False


@dataclass(slots=True)
class _Group:
    """Pods sharing a namespace and a label set, counted per row."""

    namespace: str
    labels: dict[str, str]
    terminating: bool = False  # being deleted: spread no longer counts them
    per_row: dict[int, int] = field(default_factory=dict)
    refs: int = 0  # records (counted or ghosts) of this group
    # per_row as an array over the state's capacity, built by group_counts for a group
    # on many rows and kept in step with per_row from then on (None: not built)
    counts: npt.NDArray[np.int64] | None = None


class ClusterState:
    """Nodes and the pods on them, as matrices; see the module docstring for the layout."""

    def __init__(self, capacity: int = _INITIAL_ROWS) -> None:
        self.capacity = max(1, capacity)
        self.rows = 0  # high-water mark of used rows
        self.version = 0  # bumped on every node change (static per-class caches key on it)
        self.names: list[str | None] = []
        self.row_of: dict[str, int] = {}
        self._free: list[int] = []
        self.resource_names: list[str] = list(FIXED_RESOURCES)
        self.resource_index: dict[str, int] = {n: i for i, n in enumerate(FIXED_RESOURCES)}
        cap, res = self.capacity, len(FIXED_RESOURCES)
        self.allocatable = np.zeros((cap, res), dtype=_typedefs.QUANTITY)
        self.requested = np.zeros((cap, res), dtype=_typedefs.QUANTITY)
        self.nonzero_requested = np.zeros((cap, 2), dtype=_typedefs.QUANTITY)
        self.present = np.zeros(cap, dtype=_typedefs.MASK)
        self.unschedulable = np.zeros(cap, dtype=_typedefs.MASK)
        self.ready = np.zeros(cap, dtype=_typedefs.MASK)
        # labels: key -> column of value ids; key -> value -> id; key -> id -> value (None:
        # a free id). An id is freed when no node holds its value any more and reused by
        # the next new value, so that ids stay as few as the values nodes hold at once
        # (hostnames of nodes that come and go would otherwise grow them without end).
        self.label_columns: dict[str, npt.NDArray[np.int32]] = {}
        self.label_value_ids: dict[str, dict[str, int]] = {}
        self.label_values: dict[str, list[str | None]] = {}
        self._label_users: dict[str, list[int]] = {}  # key -> id -> rows holding it
        self._free_label_ids: dict[str, list[int]] = {}
        self.node_labels: list[dict[str, str]] = []
        # taints
        self.taint_ids: dict[tuple[str, str, str], int] = {}
        self.taint_list: list[tuple[str, str, str]] = []
        self.taints = np.zeros((cap, 0), dtype=_typedefs.MASK)
        self.node_taints: list[list[int]] = []  # per row, taint ids in the node's order
        # images: name -> {row: size in bytes}, the size being the image state's (the same
        # for every row); image_sizes: name -> that size
        self.images: dict[str, dict[int, int]] = {}
        self.image_sizes: dict[str, int] = {}
        self.node_images: list[list[str]] = []
        # host ports in use: per row, the set of (ip, protocol, port) as a dict of 1s
        self.ports: list[dict[HostPort, int]] = []
        # the rows that may hold a host port (every row that does, and rows since emptied
        # until rows_with_ports drops them): a burst reads the few rows holding one
        # instead of every row
        self._port_rows: set[int] = set()
        # pods counted on a row, and pods of absent nodes: node name -> key -> record
        self.pods: dict[str, PodRecord] = {}
        self.ghosts: dict[str, dict[str, PodRecord]] = {}
        self._ghost_node: dict[str, str] = {}  # ghost pod key -> its node's name
        self._ghost_ports: dict[str, dict[HostPort, int]] = {}  # node name -> its port set
        self.pods_on_row: list[set[str]] = []
        self.groups: list[_Group] = []
        self.group_ids: dict[tuple[str, Labels], int] = {}
        # bumped whenever a group id gets or loses its (namespace, labels): what is indexed
        # by group id stays valid while it is the same (core/spread.py's label index)
        self.groups_version = 0
        self._free_groups: list[int] = []
        self.affinity_pods_on_row: list[int] = []  # pods carrying pod (anti-)affinity
        # their sum: a burst asks whether there is any, and a scan of every row costs more
        # than a small burst's encoding
        self.affinity_pods = 0
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # PVCs, PVs, StorageClasses and CSI objects, for the volume filters (core/volumes.py)
        self.storage = StorageObjects()

    # ----------------------------------------------------------------- sizing helpers
    @property
    def node_count(self) -> int:
        return self.rows - len(self._free)

    def _grow_rows(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        cap = self.capacity
        while cap < needed:
            cap *= 2

        def grown(a: np.ndarray, fill: int = 0) -> np.ndarray:
            out = np.full((cap, *a.shape[1:]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self.allocatable = grown(self.allocatable)
        self.requested = grown(self.requested)
        self.nonzero_requested = grown(self.nonzero_requested)
        self.present = grown(self.present)
        self.unschedulable = grown(self.unschedulable)
        self.ready = grown(self.ready)
        self.taints = grown(self.taints)
        for key, column in self.label_columns.items():
            self.label_columns[key] = grown(column, -1)
        for group in self.groups:
            group.counts = None  # built again at the new capacity when next read
        self.capacity = cap

    def resource_column(self, name: str) -> int:
        """The column of resource ``name``, adding an all-zero column the first time."""
        index = self.resource_index.get(name)
        if index is not None:
            return index
        index = len(self.resource_names)
        self.resource_names.append(name)
        self.resource_index[name] = index
        pad = np.zeros((self.capacity, 1), dtype=_typedefs.QUANTITY)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.requested = np.hstack([self.requested, pad])
        return index

    def label_column(self, key: str) -> npt.NDArray[np.int32]:
        """The value-id column of label ``key`` (all -1 when no node has the key)."""
        column = self.label_columns.get(key)
        if column is None:
            column = np.full(self.capacity, -1, dtype=np.int32)
            self.label_columns[key] = column
            self.label_value_ids[key] = {}
            self.label_values[key] = []
            self._label_users[key] = []
            self._free_label_ids[key] = []
        return column

    def label_value_id(self, key: str, value: str) -> int:
        """The id of ``value`` under ``key``, interning it (a freed id first, else the next
        one); ids stay below ``len(label_values[key])``."""
        self.label_column(key)
        ids = self.label_value_ids[key]
        vid = ids.get(value)
        if vid is None:
            free = self._free_label_ids[key]
            if free:
                vid = free.pop()
                self.label_values[key][vid] = value
            else:
                vid = len(self.label_values[key])
                self.label_values[key].append(value)
                self._label_users[key].append(0)
            ids[value] = vid
        return vid

    def _set_label(self, row: int, key: str, value: str) -> None:
        column = self.label_column(key)
        vid = self.label_value_id(key, value)
        old = int(column[row])
        if old == vid:
            return
        self._label_users[key][vid] += 1
        column[row] = vid
        if old >= 0:
            self._release_label(key, old)

    def _clear_label(self, row: int, key: str) -> None:
        column = self.label_columns[key]
        old = int(column[row])
        column[row] = -1
        if old >= 0:
            self._release_label(key, old)

    def _release_label(self, key: str, vid: int) -> None:
        users = self._label_users[key]
        users[vid] -= 1
        if users[vid] == 0:
            values = self.label_values[key]
            del self.label_value_ids[key][values[vid]]  # type: ignore[arg-type]
            values[vid] = None
            self._free_label_ids[key].append(vid)

    def taint_id(self, taint: tuple[str, str, str]) -> int:
        tid = self.taint_ids.get(taint)
        if tid is None:
            tid = len(self.taint_list)
            self.taint_ids[taint] = tid
            self.taint_list.append(taint)
            pad = np.zeros((self.capacity, 1), dtype=_typedefs.MASK)
            self.taints = np.hstack([self.taints, pad])
        return tid

    # ----------------------------------------------------------------------- nodes
    def add_node(self, node: Mapping[str, Any]) -> int:
        """Add (or update, when its name is known) a node; return its row."""
        name = (node.get("metadata") or {})["name"]
        row = self.row_of.get(name)
        if row is not None:
            self._fill_node(row, node)
            return row
        if self._free:
            row = self._free.pop()
        else:
            row = self.rows
            self._grow_rows(row + 1)
            self.rows += 1
            self.names.append(None)
            self.node_labels.append({})
            self.node_taints.append([])
            self.node_images.append([])
            self.ports.append({})
            self.pods_on_row.append(set())
            self.affinity_pods_on_row.append(0)
        self.names[row] = name
        self.row_of[name] = row
        self.present[row] = 1
        self._fill_node(row, node)
        # A node coming (back) under a known name: the pods bound to it count again.
        for key, record in self.ghosts.pop(name, {}).items():
            del self._ghost_node[key]
            record.row = row
            self._count(key, record, +1, with_ports=False)
        self.ports[row] = self._ghost_ports.pop(name, {})
        if self.ports[row]:
            self._port_rows.add(row)
        return row

    update_node = add_node

    def _fill_node(self, row: int, node: Mapping[str, Any]) -> None:
        self.version += 1
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.allocatable[row] = 0
        for res, amount in node_allocatable(node).items():
            column = self.resource_column(res)  # may widen the matrix: look it up first
            self.allocatable[row, column] = amount
        self.unschedulable[row] = 1 if spec.get("unschedulable") else 0
        self.ready[row] = 0
        for condition in status.get("conditions") or ():
            if condition.get("type") == "Ready":
                self.ready[row] = 1 if condition.get("status") == "True" else 0
        # labels (new values are taken before old ones are let go, so a value the node
        # keeps keeps its id)
        old_labels = self.node_labels[row]
        labels = dict(meta.get("labels") or {})
        for key, value in labels.items():
            self._set_label(row, key, value)
        for key in old_labels:
            if key not in labels:
                self._clear_label(row, key)
        self.node_labels[row] = labels
        # taints
        for tid in self.node_taints[row]:
            self.taints[row, tid] = 0
        ids = []
        for taint in spec.get("taints") or ():
            tid = self.taint_id(
                (taint.get("key", ""), taint.get("value") or "", taint.get("effect", ""))
            )
            self.taints[row, tid] = 1
            ids.append(tid)
        self.node_taints[row] = ids
        # images: an update drops the node's old images first, as upstream's UpdateNode does
        self._drop_images(row)
        names = []
        for image in node_images(node):
            # Names as the kubelet reports them (upstream does not normalise these; only
            # the pod's image names get ":latest").
            for image_name in image.get("names") or ():
                size = self.image_sizes.get(image_name)
                if size is None:  # the first node to report the name sets its size
                    size = self.image_sizes[image_name] = int(image.get("sizeBytes") or 0)
                    self.images[image_name] = {}
                self.images[image_name][row] = size
                names.append(image_name)
        self.node_images[row] = names

    def _drop_images(self, row: int) -> None:
        for image_name in self.node_images[row]:
            holders = self.images.get(image_name)
            if holders is not None:
                holders.pop(row, None)
                if not holders:
                    del self.images[image_name]
                    del self.image_sizes[image_name]
        self.node_images[row] = []

    def remove_node(self, name: str) -> None:
        """Forget a node; its row is reused by the next node added.

        Its pods stop counting but are kept under the node's name (see the module
        docstring): they count again if a node of that name comes back, and leave for
        good when they are removed themselves.
        """
        row = self.row_of.pop(name, None)
        if row is None:
            return
        self.version += 1
        ghosts = self.ghosts.setdefault(name, {})
        for key in list(self.pods_on_row[row]):
            record = self.pods[key]
            self._count(key, record, -1, with_ports=False)
            record.row = -1
            ghosts[key] = record
            self._ghost_node[key] = name
        if ghosts:
            self._ghost_ports[name] = self.ports[row]
        else:
            del self.ghosts[name]
        for key in self.node_labels[row]:
            self._clear_label(row, key)
        self.node_labels[row] = {}
        for tid in self.node_taints[row]:
            self.taints[row, tid] = 0
        self.node_taints[row] = []
        self._drop_images(row)
        self.allocatable[row] = 0
        self.requested[row] = 0
        self.nonzero_requested[row] = 0
        self.present[row] = 0
        self.unschedulable[row] = 0
        self.ready[row] = 0
        self.ports[row] = {}
        self.names[row] = None
        self._free.append(row)

    def rows_with_ports(self) -> list[int]:
        """The rows holding a host port, ascending (few: most pods declare none)."""
        ports = self.ports
        self._port_rows = {row for row in self._port_rows if ports[row]}
        return sorted(self._port_rows)

    def node_rows(self) -> Iterator[int]:
        """Rows that hold a node, in row order."""
        return (row for row in range(self.rows) if self.present[row])

    def set_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """Record a namespace's labels (inter-pod terms with a namespaceSelector read them)."""
        self.namespace_labels[name] = dict(labels)

    # ------------------------------------------------------------------------ pods
    def _group(
        self, namespace: str, labels: Labels, terminating: bool = False, refs: int = 1
    ) -> int:
        """The id of a (namespace, labels) group, for ``refs`` more records of it."""
        key = (namespace, labels) if not terminating else (namespace, labels, True)
        gid = self.group_ids.get(key)  # type: ignore[arg-type]
        if gid is None:
            group = _Group(namespace, dict(labels), terminating, {}, refs)
            if self._free_groups:
                gid = self._free_groups.pop()
                self.groups[gid] = group
            else:
                gid = len(self.groups)
                self.groups.append(group)
            self.group_ids[key] = gid  # type: ignore[index]
            self.groups_version += 1
        else:
            self.groups[gid].refs += refs
        return gid

    def _release_group(self, gid: int) -> None:
        """A record of the group is gone; the group goes with its last one."""
        group = self.groups[gid]
        group.refs -= 1
        if group.refs:
            return
        labels: Labels = tuple(sorted(group.labels.items()))
        key = (group.namespace, labels, True) if group.terminating else (group.namespace, labels)
        del self.group_ids[key]  # type: ignore[arg-type]
        # An empty group holds the id until it is reused: it counts no pod on any row.
        self.groups[gid] = _Group("", {})
        self._free_groups.append(gid)
        self.groups_version += 1

    def add_pod(self, pod: Mapping[str, Any], node_name: str | None = None) -> bool:
        """Count a pod bound (or being bound) to a node; False when the node is unknown.

        ``node_name`` defaults to ``spec.nodeName``. A pod already known is moved. A pod
        of an unknown node is kept as a ghost of that node (see the module docstring).
        """
        spec = pod.get("spec") or {}
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.remove_pod(pod)  # a finished pod holds nothing
            return False
        node_name = node_name or spec.get("nodeName")
        key = pod_key(pod)
        self.remove_pod_key(key)
        if not node_name:
            return False
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        if spec.get("volumes"):  # the claims it uses (VolumeRestrictions, NodeVolumeLimits)
            self.storage.use(key, namespace, spec, node_name)
        labels: Labels = tuple(sorted((meta.get("labels") or {}).items()))
        requests = {
            self.resource_column(res): amount
            for res, amount in pod_requests(pod, use_status=True).items()
            if amount
        }
        affinity = spec.get("affinity") or None
        if affinity and not (affinity.get("podAffinity") or affinity.get("podAntiAffinity")):
            affinity = None
        record = PodRecord(
            row=-1,
            namespace=namespace,
            labels=labels,
            requests=requests,
            nonzero=pod_nonzero_requests(pod, use_status=True),
            ports=host_ports(pod),
            group=self._group(namespace, labels, bool(meta.get("deletionTimestamp"))),
            affinity=affinity,
        )
        row = self.row_of.get(node_name)
        if row is None:
            self.ghosts.setdefault(node_name, {})[key] = record
            self._ghost_node[key] = node_name
            ports = self._ghost_ports.setdefault(node_name, {})
            for port in record.ports:
                ports[port] = 1
            return False
        record.row = row
        self._count(key, record, +1)
        return True

    def assume_pod(self, pod: Mapping[str, Any], node_name: str) -> bool:
        """Count a pod the scheduler has placed but whose binding is not confirmed yet."""
        added = self.add_pod(pod, node_name)
        record = self.pod_record(pod_key(pod))
        if record is not None:
            record.assumed = True
        return added

    def confirm_pod(self, pod: Mapping[str, Any]) -> None:
        """The watch saw the binding: the assumed pod is now bound (counted once)."""
        record = self.pod_record(pod_key(pod))
        if record is not None:
            record.assumed = False

    def pod_record(self, key: str) -> PodRecord | None:
        """The record of a known pod, counted on a row or a ghost of an absent node."""
        record = self.pods.get(key)
        if record is None:
            node_name = self._ghost_node.get(key)
            if node_name is not None:
                record = self.ghosts[node_name][key]
        return record

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        self.remove_pod_key(pod_key(pod))

    forget_pod = remove_pod

    def remove_pod_key(self, key: str) -> None:
        """Forget a pod, whether it counts on a row or is a ghost of an absent node."""
        if self.storage.pod_claims or self.storage.disk_nodes:
            self.storage.unuse(key)
        record = self.pods.get(key)
        if record is not None:
            self._count(key, record, -1)
            self._release_group(record.group)
            return
        node_name = self._ghost_node.pop(key, None)
        if node_name is not None:
            ghosts = self.ghosts[node_name]
            ports = self._ghost_ports[node_name]
            record = ghosts.pop(key)
            self._release_group(record.group)
            for port in record.ports:
                ports.pop(port, None)
            if not ghosts:
                del self.ghosts[node_name]
                del self._ghost_ports[node_name]

    def _count(
        self,
        key: str,
        record: PodRecord,
        sign: int,
        with_ports: bool = True,
        resources: bool = True,
    ) -> None:
        """Add (+1) or take back (-1) a pod's share of its row (its ports too, unless the
        row's port set moves as a whole: a node leaving or coming back; its requests too,
        unless the caller sets the requested columns itself)."""
        row = record.row
        if resources:
            for column, amount in record.requests.items():
                self.requested[row, column] += sign * amount
            self.requested[row, POD_COLUMN] += sign
            self.nonzero_requested[row, 0] += sign * record.nonzero[0]
            self.nonzero_requested[row, 1] += sign * record.nonzero[1]
        # A set, as upstream's HostPortInfo: a removal frees the port even when another
        # pod on the row declared it too.
        ports = self.ports[row]
        for port in record.ports if with_ports else ():
            if sign > 0:
                ports[port] = 1
                self._port_rows.add(row)
            else:
                ports.pop(port, None)
        group = self.groups[record.group]
        per_row = group.per_row
        left = per_row.get(row, 0) + sign
        if left:
            per_row[row] = left
        else:
            per_row.pop(row, None)
        if group.counts is not None:
            group.counts[row] += sign
        if record.affinity is not None:
            self.affinity_pods_on_row[row] += sign
            self.affinity_pods += sign
        if sign > 0:
            self.pods[key] = record
            self.pods_on_row[row].add(key)
        else:
            del self.pods[key]
            self.pods_on_row[row].discard(key)

    def add_placed(
        self,
        key: str,
        row: int,
        namespace: str,
        labels: Labels,
        requests: Mapping[int, int],
        nonzero: tuple[int, int],
        ports: list[HostPort],
        affinity: Mapping[str, Any] | None,
        resources: bool = True,
    ) -> None:
        """Assume a pod the kernel placed, from its already-encoded parts (no re-parsing).

        ``resources=False``: leave the requested columns alone (place_burst copies the
        kernel's, which already count the pod)."""
        self.add_placed_many(
            [key], [row], namespace, labels, requests, nonzero, ports, affinity, resources
        )

    def add_placed_many(
        self,
        keys: Sequence[str],
        rows: Sequence[int],
        namespace: str,
        labels: Labels,
        requests: Mapping[int, int],
        nonzero: tuple[int, int],
        ports: list[HostPort],
        affinity: Mapping[str, Any] | None,
        resources: bool = True,
    ) -> None:
        """``add_placed`` for several pods of one class (the same encoded parts): pod
        ``keys[i]`` on row ``rows[i]``. Their records share the class's request map and
        port list (records never change them) and its group, and the requested columns
        move in one vectorised step."""
        count = len(keys)
        if count > 1 and len(set(keys)) != count:  # the same pod twice: the later one wins
            for key, row in zip(keys, rows, strict=True):
                self.add_placed_many(
                    [key], [row], namespace, labels, requests, nonzero, ports, affinity, resources
                )
            return
        if not count:
            return
        pods, ghosts = self.pods, self._ghost_node
        for key in keys:
            if key in pods or key in ghosts:  # a known pod moves
                self.remove_pod_key(key)
        shared_requests = dict(requests)
        shared_ports = list(ports)
        gid = self._group(namespace, labels, refs=count)
        group = self.groups[gid]
        per_row = group.per_row
        pods_on_row = self.pods_on_row
        for key, row in zip(keys, rows, strict=True):
            pods[key] = PodRecord(  # positional, in field order: this runs once per placement
                row, namespace, labels, shared_requests, nonzero, shared_ports, gid, affinity, True
            )
            pods_on_row[row].add(key)
            per_row[row] = per_row.get(row, 0) + 1
        if group.counts is not None:
            np.add.at(group.counts, np.asarray(rows, dtype=np.intp), 1)
        if shared_ports:
            self._port_rows.update(rows)
            for row in rows:
                row_ports = self.ports[row]
                for port in shared_ports:
                    row_ports[port] = 1
        if affinity is not None:
            for row in rows:
                self.affinity_pods_on_row[row] += 1
            self.affinity_pods += len(rows)
        if resources:
            at = np.asarray(rows, dtype=np.intp)
            for column, amount in shared_requests.items():
                np.add.at(self.requested[:, column], at, amount)
            np.add.at(self.requested[:, POD_COLUMN], at, 1)
            np.add.at(self.nonzero_requested[:, 0], at, nonzero[0])
            np.add.at(self.nonzero_requested[:, 1], at, nonzero[1])

    # ------------------------------------------------------------------- queries
    def frozen_groups(self) -> list[_Group]:
        """A copy of the pod groups as they are now, which later records leave alone."""
        return [
            dataclasses.replace(group, per_row=dict(group.per_row), counts=None)
            for group in self.groups
        ]

    def group_counts(
        self, groups: list[int], table: Sequence[_Group] | None = None
    ) -> npt.NDArray[np.int64]:
        """Pods per row, summed over the given (namespace, labels) groups of ``table``
        (``frozen_groups``; the state's own groups by default)."""
        own = table is None or table is self.groups
        table = self.groups if table is None else table
        rows = self.rows
        out = np.zeros(rows, dtype=np.int64)
        for gid in groups:
            group = table[gid]
            per_row = group.per_row
            if not per_row:
                continue
            counts = group.counts
            if counts is None and own and 16 * len(per_row) >= rows:
                # A group on a sixteenth of the rows or more (a ReplicaSet's pods under a
                # steady stream): its array, kept in step by every record, is summed at
                # each burst instead of the dict (about the size of the dict's entries).
                counts = group.counts = np.zeros(self.capacity, dtype=np.int64)
                counts[np.fromiter(per_row.keys(), np.int64, len(per_row))] = np.fromiter(
                    per_row.values(), np.int64, len(per_row)
                )
            if counts is not None and own:
                out += counts[:rows]
            else:
                out[np.fromiter(per_row.keys(), np.int64, len(per_row))] += np.fromiter(
                    per_row.values(), np.int64, len(per_row)
                )
        return out
