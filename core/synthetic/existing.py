"""Running load: put generated pods on nodes, as if they had been scheduled long ago.

A scenario's ``bound: true`` workloads become the pods already running when the burst
arrives. ``place`` spreads each class over the nodes it may use, round-robin in a seeded
order, honouring what makes a placement invalid for the node itself: node selectors and
required node affinity, NoSchedule/NoExecute taints, cordoned nodes, every resource
(cpu, memory, ephemeral-storage, pods, GPUs), host ports, and a class's required
anti-affinity to itself on the hostname. It does not score and does not apply topology
spread or other inter-pod terms: old pods need not satisfy constraints that are checked
only at scheduling time. Gangs are placed pod by pod. Pods that fit nowhere stay pending.

It is a generator's helper, not a scheduler: it exists so that large "running" clusters
(150,000 pods on 5,000 nodes) can be built in seconds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.resources import host_ports, node_allocatable, pod_requests

Object = dict[str, Any]
_SHARED = ("containers", "initContainers", "nodeSelector", "affinity", "tolerations")


class _Nodes:
    """Columns of the fleet that the static checks read."""

    def __init__(self, nodes: list[Object]) -> None:
        self.count = len(nodes)
        self.names = [node["metadata"]["name"] for node in nodes]
        # Nodes of one machine shape report the same allocatable: parse each text once.
        by_text: dict[str, dict[str, int]] = {}
        allocatable = []
        for node in nodes:
            text = repr(node.get("status", {}).get("allocatable"))
            if text not in by_text:
                by_text[text] = node_allocatable(node)
            allocatable.append(by_text[text])
        self.resources = sorted({name for row in allocatable for name in row})
        self.free = np.array(
            [[row.get(r, 0) for r in self.resources] for row in allocatable], dtype=np.int64
        ).reshape(self.count, len(self.resources))
        self.labels = [node["metadata"].get("labels", {}) for node in nodes]
        self._columns: dict[str, npt.NDArray[np.object_]] = {}
        self._numbers: dict[str, npt.NDArray[np.float64]] = {}
        # Static masks by the text of the spec parts they read; many classes share them.
        self.masks: dict[str, npt.NDArray[np.bool_]] = {}
        self.schedulable = np.array(
            [not node.get("spec", {}).get("unschedulable") for node in nodes], dtype=bool
        )
        self.taints: dict[tuple[str, str, str], npt.NDArray[np.bool_]] = {}
        for row, node in enumerate(nodes):
            for taint in node.get("spec", {}).get("taints", []):
                if taint["effect"] in ("NoSchedule", "NoExecute"):
                    key = (taint["key"], taint.get("value", ""), taint["effect"])
                    self.taints.setdefault(key, np.zeros(self.count, dtype=bool))[row] = True
        self._ports: dict[tuple[str, int], npt.NDArray[np.bool_]] = {}
        self.cursor = 0

    def port_rows(self, port: tuple[str, int]) -> npt.NDArray[np.bool_]:
        """Which nodes already have a pod bound to this (protocol, host port)."""
        if port not in self._ports:
            self._ports[port] = np.zeros(self.count, dtype=bool)
        return self._ports[port]

    def numeric_column(self, key: str) -> npt.NDArray[np.float64]:
        """The integer values of one label key per node (NaN where absent or not an integer)."""
        if key not in self._numbers:
            numbers = np.full(self.count, np.nan)
            for row, text in enumerate(self.column(key)):
                if text is not None and text.lstrip("-").isdigit():
                    numbers[row] = int(text)
            self._numbers[key] = numbers
        return self._numbers[key]

    def column(self, key: str) -> npt.NDArray[np.object_]:
        """The values of one label key per node (None where absent)."""
        if key not in self._columns:
            column = np.empty(self.count, dtype=object)
            column[:] = [labels.get(key) for labels in self.labels]
            self._columns[key] = column
        return self._columns[key]


def _expression_mask(nodes: _Nodes, expr: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
    column = nodes.column(expr["key"])
    present = column != None  # noqa: E711 - element-wise comparison on an object array
    operator, values = expr["operator"], expr.get("values", [])
    if operator == "In":
        return present & np.isin(column, values)
    if operator == "NotIn":
        return ~(present & np.isin(column, values))
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return ~present
    # Gt/Lt: a node whose value is not an integer is NaN here, and NaN compares false.
    numbers = nodes.numeric_column(expr["key"])
    bound = int(values[0])
    return numbers > bound if operator == "Gt" else numbers < bound


def _tolerates(tolerations: list[Mapping[str, Any]], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for t in tolerations:
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == key:
                return True
        elif t.get("key") == key and t.get("value", "") == value:
            return True
    return False


def static_mask(nodes: _Nodes, spec: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
    """Nodes that a pod with this spec may use before counting resources (do not modify)."""
    required = (
        (spec.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    key = repr((spec.get("nodeSelector"), required, spec.get("tolerations")))
    if key not in nodes.masks:
        nodes.masks[key] = _static_mask(nodes, spec, required)
    return nodes.masks[key]


def _static_mask(
    nodes: _Nodes, spec: Mapping[str, Any], required: Mapping[str, Any] | None
) -> npt.NDArray[np.bool_]:
    mask = nodes.schedulable.copy()
    for key, value in (spec.get("nodeSelector") or {}).items():
        mask &= nodes.column(key) == value
    if required:
        any_term = np.zeros(nodes.count, dtype=bool)
        for term in required.get("nodeSelectorTerms", []):
            term_mask = np.ones(nodes.count, dtype=bool)
            for expr in term.get("matchExpressions", []):
                term_mask &= _expression_mask(nodes, expr)
            any_term |= term_mask
        mask &= any_term
    tolerations = spec.get("tolerations") or []
    for taint, rows in nodes.taints.items():
        if not _tolerates(tolerations, taint):
            mask &= ~rows
    return mask


def _self_anti_affine(pod: Mapping[str, Any]) -> bool:
    terms = (
        (pod["spec"].get("affinity") or {})
        .get("podAntiAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", [])
    )
    labels = pod["metadata"].get("labels", {})
    return any(
        term.get("topologyKey") == "kubernetes.io/hostname"
        and all(labels.get(k) == v for k, v in term["labelSelector"].get("matchLabels", {}).items())
        for term in terms
    )


def _class_key(pod: Mapping[str, Any]) -> tuple[int, ...]:
    # Replicas from one generated class share these objects (see ``pods``); any other pod
    # simply gets a class of its own.
    spec = pod["spec"]
    return tuple(id(spec.get(key)) for key in _SHARED)


def place(
    pods: list[Object], nodes: list[Object], seed: int = 0
) -> tuple[list[Object], list[Object]]:
    """Set ``spec.nodeName`` (and phase Running) on the pods that fit; return
    (bound, left pending), each in the input order."""
    fleet = _Nodes(nodes)
    rng = random.Random(seed)
    order = np.array(rng.sample(range(fleet.count), fleet.count), dtype=np.int64)
    classes: dict[tuple[int, ...], list[int]] = {}
    for index, pod in enumerate(pods):
        classes.setdefault(_class_key(pod), []).append(index)
    placed = np.full(len(pods), -1, dtype=np.int64)
    requests_by_text: dict[str, dict[str, int]] = {}
    for members in classes.values():
        first = pods[members[0]]
        spec = first["spec"]
        text = repr(
            [spec.get(k) for k in ("containers", "initContainers", "overhead", "resources")]
        )
        if text not in requests_by_text:
            requests_by_text[text] = {**pod_requests(first), "pods": 1}
        request = requests_by_text[text]
        for name in request:
            if name not in fleet.resources and request[name] > 0:
                break  # no node offers it
        else:
            _place_class(fleet, first, members, request, order, placed)
    bound, pending = [], []
    for index, pod in enumerate(pods):
        row = placed[index]
        if row < 0:
            pending.append(pod)
            continue
        pod["spec"]["nodeName"] = fleet.names[row]
        pod["status"] = {"phase": "Running"}
        bound.append(pod)
    return bound, pending


def _place_class(
    fleet: _Nodes,
    pod: Mapping[str, Any],
    members: list[int],
    request: dict[str, int],
    order: npt.NDArray[np.int64],
    placed: npt.NDArray[np.int64],
) -> None:
    want = np.array([request.get(r, 0) for r in fleet.resources], dtype=np.int64)
    ports = {(p.protocol, p.port) for p in host_ports(pod)}
    at_most_one = bool(ports) or _self_anti_affine(pod)
    # Each class starts where the last one stopped, so that one-pod classes do not all pile
    # onto the first nodes of the order.
    rotated = np.concatenate((order[fleet.cursor :], order[: fleet.cursor]))
    candidates = rotated[static_mask(fleet, pod["spec"])[rotated]]
    for port in ports:
        candidates = candidates[~fleet.port_rows(port)[candidates]]
    pending = list(members)
    while pending and len(candidates):
        # One replica per node per round keeps a class spread over the nodes it may use.
        # Rows are checked a window at a time: a small class looks at few nodes.
        with_room = []
        start = 0
        size = max(64, 2 * len(pending))
        while pending and start < len(candidates):
            # Windows double, so a pod that fits nowhere costs a few scans, not one per 64 rows.
            window = candidates[start : start + size]
            start += len(window)
            size *= 2
            fits = window[np.all(fleet.free[window] >= want, axis=1)]
            take = fits[: len(pending)]
            fleet.free[take] -= want
            placed[pending[: len(take)]] = take
            for port in ports:
                fleet.port_rows(port)[take] = True
            pending = pending[len(take) :]
            with_room.append(fits)
        if at_most_one or not pending:
            break
        candidates = np.concatenate(with_room)
    fleet.cursor = (fleet.cursor + len(members) - len(pending)) % max(fleet.count, 1)
