"""The registry's static plugins (``static_filter``, ``static_score``, ``score_channel``)
for one pod.

A static plugin is written over a ``NodeTable``: one answer per node, at once. The encoder
gives it the ClusterState's interned label columns; here it gets the nodes of one pod's
cycle, read plainly from their labels, and the pod itself as the class. So the oracle
(core/reference), preemption's dry run and ``explain`` evaluate the plugin's own
function, and the kernel-vs-reference tests check what the encoder and the kernel make of
it (masks, reason counts, weights, totals), not the plugin's logic a second time: that is
its module's own tests' job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.pernode.framework import Pod, Status
from kubesalvo.core.pernode.selectors import node_selector_terms
from kubesalvo.core.pernode.snapshot import Cache, NodeInfo, Snapshot, namespace_of
from kubesalvo.core.plugins.framework import (
    MAX_NODE_SCORE,
    Normalise,
    PerNode,
    PerNodeScore,
    PluginSpec,
)

__all__ = ["StaticFilter", "channel_scores", "static_per_node", "static_scores"]


class _Nodes:
    """A NodeTable over a list of nodes: their labels, taints and images. ``snapshot``:
    the cluster they are some of (images are shared by a share of all its nodes); without
    one, the nodes are the whole cluster."""

    def __init__(self, nodes: Sequence[NodeInfo], snapshot: Snapshot | None = None) -> None:
        self.nodes = nodes
        self._snapshot = snapshot

    def _cluster(self) -> Snapshot:
        if self._snapshot is None:
            cache = Cache()
            for node in self.nodes:
                cache.add_node(node.node)
            self._snapshot = cache.snapshot()
        return self._snapshot

    def label_in(self, key: str, values: Sequence[str]) -> npt.NDArray[np.bool_]:
        wanted = set(values)
        return np.array([n.labels.get(key) in wanted for n in self.nodes], dtype=bool)

    def has_label(self, key: str) -> npt.NDArray[np.bool_]:
        return np.array([key in n.labels for n in self.nodes], dtype=bool)

    def node_names(self) -> Sequence[str | None]:
        return [n.name for n in self.nodes]

    def name_in(self, names: Set[str]) -> npt.NDArray[np.bool_]:
        return np.array([n.name in names for n in self.nodes], dtype=bool)

    def labels_of(self, row: int) -> Mapping[str, str]:
        return self.nodes[row].labels

    def labels_match(self, selector: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        terms = node_selector_terms(selector)
        return np.array(
            [any(t.matches({"metadata": {"labels": n.labels}}) for t in terms) for n in self.nodes],
            dtype=bool,
        )

    def term_match(self, term: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        terms = node_selector_terms({"nodeSelectorTerms": [term]})  # empty: no term
        return np.array(
            [
                any(t.matches({"metadata": {"name": n.name, "labels": n.labels}}) for t in terms)
                for n in self.nodes
            ],
            dtype=bool,
        )

    def taint_keys(self) -> Set[str]:
        return {t.get("key") or "" for n in self.nodes for t in n.taints}

    def taint_counts(
        self, counted: Callable[[tuple[str, str, str]], bool]
    ) -> npt.NDArray[np.int64]:
        return np.array(
            [
                sum(
                    counted((t.get("key") or "", t.get("value") or "", t.get("effect") or ""))
                    for t in n.taints
                )
                for n in self.nodes
            ],
            dtype=np.int64,
        )

    def unschedulable(self) -> npt.NDArray[np.bool_]:
        return np.array([n.unschedulable for n in self.nodes], dtype=bool)

    def image_rows(self, image: str) -> tuple[npt.NDArray[np.int64], int, int]:
        cluster = self._cluster()
        state = cluster.images.get(image)
        if state is None:
            return np.zeros(0, dtype=np.int64), 0, 0
        held = [i for i, n in enumerate(self.nodes) if image in cluster.node_images[n.name]]
        return np.array(held, dtype=np.int64), state.size, state.num_nodes

    def node_count(self) -> int:
        return len(self._cluster().nodes)


@dataclass
class _OnePod:
    """One pod as the class a static plugin reads (``framework.PodClass``)."""

    namespace: str
    spec: Mapping[str, Any]
    label_map: dict[str, str] = field(default_factory=dict)
    devices: Any = None  # its DynamicResources cycle state: the evaluator's own (DeviceVerdicts)

    @classmethod
    def of(cls, pod: Pod) -> _OnePod:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return cls(namespace_of(pod), pod.get("spec") or {}, dict(labels))


class StaticFilter:
    """A static filter plugin in one pod's cycle: decided for every node at once."""

    node_names: frozenset[str] | None = None

    def __init__(self, spec: PluginSpec, args: Any, pod: Pod, nodes: Sequence[NodeInfo]) -> None:
        assert spec.static_filter is not None
        ((reason, code),) = spec.reasons.items()
        self._status = Status(code, (reason,))
        passing = spec.static_filter(args, _Nodes(nodes), _OnePod.of(pod))
        self._passing = {n.name for n, ok in zip(nodes, passing, strict=True) if ok}

    def filter(self, node: NodeInfo) -> Status | None:
        return None if node.name in self._passing else self._status


def static_scores(
    spec: PluginSpec, args: Any, pod: Pod, feasible: Sequence[NodeInfo]
) -> dict[str, int]:
    """A static score plugin's score of each feasible node (final: no normalisation)."""
    assert spec.static_score is not None
    scores = spec.static_score(args, _Nodes(feasible), _OnePod.of(pod))
    return {n.name: int(s) for n, s in zip(feasible, scores, strict=True)}


def channel_scores(
    spec: PluginSpec,
    args: Any,
    pod: Pod,
    feasible: Sequence[NodeInfo],
    snapshot: Snapshot | None = None,
    devices: Any = None,
) -> dict[str, int]:
    """A score channel's normalised score of each feasible node, as kube-scheduler's
    DefaultNormalizeScore: MAX scales by the largest raw value (all 0 when it is 0),
    REVERSE_MAX reverses that (all 100 when it is 0); NONE values are final.
    ``snapshot``: the cluster of the feasible nodes (None: they are all of it);
    ``devices``: the pod's DynamicResources cycle state, as its class carries it."""
    channel = spec.score_channel
    assert channel is not None
    nodes = _Nodes(feasible, snapshot)
    one = _OnePod.of(pod)
    one.devices = devices
    raw = [int(v) for v in channel.raw(args, nodes, one)]
    if channel.normalise is not Normalise.NONE:
        top = max(raw, default=0)
        reverse = channel.normalise is Normalise.REVERSE_MAX
        if top == 0:
            raw = [MAX_NODE_SCORE if reverse else 0 for _ in raw]
        else:
            raw = [MAX_NODE_SCORE * v // top for v in raw]
            if reverse:
                raw = [MAX_NODE_SCORE - v for v in raw]
    return {n.name: v for n, v in zip(feasible, raw, strict=True)}


def _static_filter(spec: PluginSpec, evaluator: Any, pod: Pod) -> StaticFilter:
    return StaticFilter(spec, evaluator.profile.args_of(spec.name), pod, evaluator.snapshot.nodes)


def _static_score(
    spec: PluginSpec, evaluator: Any, pod: Pod, feasible: list[NodeInfo]
) -> dict[str, int]:
    return static_scores(spec, evaluator.profile.args_of(spec.name), pod, feasible)


def _channel_score(
    spec: PluginSpec, evaluator: Any, pod: Pod, feasible: list[NodeInfo]
) -> dict[str, int]:
    uid = (pod.get("metadata") or {}).get("uid", "")
    args = evaluator.profile.args_of(spec.name)
    return channel_scores(spec, args, pod, feasible, devices=evaluator.devices.get(uid))


def static_per_node(spec: PluginSpec) -> PerNode:
    """The per-node Filter and Score that run a spec's static functions over one pod's
    nodes (its ``static_filter``; its ``static_score`` or ``score_channel``, the channel
    given the pod's DynamicResources cycle state as the evaluator holds it)."""
    score: PerNodeScore | None = None
    if spec.static_score is not None:
        score = partial(_static_score, spec)
    elif spec.score_channel is not None:
        score = partial(_channel_score, spec)
    static_filter = None if spec.static_filter is None else partial(_static_filter, spec)
    return PerNode(filter=static_filter, score=score)
