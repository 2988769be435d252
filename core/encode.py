"""Encoding of a burst: pods -> equivalence classes -> the static arrays the kernel reads.

Pods with the same namespace, labels and spec (hence the same requests, node name and
selector, affinities, tolerations, spread constraints, images, host ports) form one class;
everything that depends only on the nodes and that signature is computed once per class,
with numpy over all rows at once:

* ``static_reason``: the first static filter that rejects each row, in kube-scheduler's
  order, each a contribution of its plugin's module: filter masks (NodeUnschedulable,
  NodeName, TaintToleration, NodeAffinity), static and class filters, node filters
  (DynamicResources) - and the rows a plugin's PreFilter leaves out (``PluginSpec.
  pre_filter``: NodeAffinity's, when a term names nodes by ``metadata.name``);
* the raw values of the profile's normalised score channels (``PluginSpec.score_channel``,
  computed by their plugins' modules; no plugin is named here): the kernel takes one
  channel of each kind, ``taint_count`` the REVERSE_MAX one (TaintToleration's untolerated
  PreferNoSchedule taints in the default profile) and ``aff_score`` the MAX one
  (NodeAffinity's preferred weights), each normalised over a pod's feasible rows;
  further channels of a kind are ``x_raw`` rows, one per channel and sub-signature
  (``c_x``: -1 where a class's values are 0 on every row: a constant score);
* ``fixed``: the registry's static scores (``PluginSpec.static_score``) and NONE channels
  (ImageLocality's in the default profile), weighted, which placements never change, and
  the constant 100 x weight of a further REVERSE_MAX channel that is 0 on every row; the
  row is keyed by the NONE channels' keys, so classes that differ elsewhere share it.

Parts of a signature that several classes share (the same tolerations, the same node
selector) share one table row, so a burst of many classes with few distinct constraints
stays small. Nothing here looks at one node at a time in Python.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core import _codes, class_cache, in_tree_disks, reasons
from kubesalvo.core.dra.pod import PodDevices
from kubesalvo.core.label_selectors import (
    Selector,
    parse_selector,
    pod_affinity_error,
)
from kubesalvo.core.plugins import (
    framework,
    names,
    node_unschedulable,
    registry,
)
from kubesalvo.core.plugins.framework import Normalise, ScoreChannel, tolerates
from kubesalvo.core.profile import Profile
from kubesalvo.core.quantity import INT64_MAX, parse_quantity
from kubesalvo.core.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    HostPort,
    host_ports,
    is_scalar_resource,
    pod_nonzero_requests,
    pod_requests,
)
from kubesalvo.core.state import ClusterState, Labels

__all__ = [
    "ClassInfo",
    "Encoder",
    "StaticTables",
    "tolerates",
]

# Static reason codes (core/_codes.pxd; core/reasons.py gives their plugins and texts).
R_UNSCHEDULABLE = _codes.UNSCHEDULABLE
R_NODE_NAME = _codes.NODE_NAME
R_TAINT = _codes.TAINT
R_NODE_AFFINITY = _codes.NODE_AFFINITY
R_ENFORCED_AFFINITY = _codes.ENFORCED_AFFINITY
R_NARROWED = _codes.NARROWED
R_ABSENT = _codes.ABSENT

UNSCHEDULABLE_TAINT = node_unschedulable.UNSCHEDULABLE_TAINT
_INT = re.compile(r"^[+-]?[0-9]+$")
_ENCODE = msgspec.json.Encoder(order="deterministic")
_NONE_KEY = _ENCODE.encode(None)
_EMPTY_LIST_KEY = _ENCODE.encode([])


def _fixed_key(info: ClassInfo) -> bytes:
    # A constant of the extra channels joins the fixed row: classes differ by it too.
    if info.fixed_const:
        return info.fixed_key + b"\0+%d" % info.fixed_const
    return info.fixed_key


# The sub-signature each static table is deduplicated by.
_SUB_KEYS: dict[str, Callable[[ClassInfo], bytes]] = {
    "static": operator.attrgetter("static_key"),
    "fixed": _fixed_key,
    "taint": operator.attrgetter("rev_key"),
    "aff": operator.attrgetter("max_key"),
}


@dataclass(slots=True)
class ClassInfo:
    """One equivalence class of the burst: what its pods share."""

    key: bytes
    namespace: str
    labels: Labels
    label_map: dict[str, str]  # the labels as a dict, for matching selectors (read-only)
    requests: dict[str, int]
    nonzero: tuple[int, int]  # cpu/memory as NodeResourcesFit's score sees the pod
    nonzero_add: tuple[int, int]  # what the pod adds to a node's non-zero requests
    ports: list[HostPort]
    spec: Mapping[str, Any]
    affinity: Mapping[str, Any] | None  # spec.affinity when it has pod (anti-)affinity
    owners: list[Mapping[str, Any]] = field(default_factory=list)  # metadata.ownerReferences
    # per own topology spread constraint: its labelSelector parsed, and the parse error
    spread_selectors: list[tuple[Selector, str | None]] = field(default_factory=list)
    spread_invalid: bool = False  # some spread_selectors entry has an error
    # pod_affinity_error of its spec when it has pod (anti-)affinity terms (None: they parse)
    affinity_error: str | None = None
    pods: int = 0
    prefilter_message: str = ""  # set when a PreFilter rejects the class on every node
    prefilter_plugin: str = ""  # and the plugin whose PreFilter it is (unresolvable)
    # the only rows a PreFilter lets the filters pass (None: every row), and the others
    # are narrowed (R_NARROWED); an array, which == cannot compare
    narrowed: npt.NDArray[np.bool_] | None = field(default=None, compare=False)
    error: str = ""  # set when a PreFilter fails the attempt with an error (no node either)
    # set when a PreScore fails the attempt with an error; kube-scheduler runs PreScore only
    # when two or more nodes are feasible, which the kernel checks (c_score_error)
    score_error: str = ""
    static_key: bytes = b""
    rev_key: bytes = b""  # the sub-signature of the REVERSE_MAX channel's raw values
    max_key: bytes = b""  # ... and of the MAX channel's
    extra_keys: tuple[bytes, ...] = ()  # ... and of the further normalised channels'
    # the 100 x weight of the further REVERSE_MAX channels whose values are 0 on every row
    # (set by Encoder.tables for its chunk): every row scores 100 there, a fixed score
    fixed_const: int = 0
    # the sub-signature of the fixed scores: the NONE channels' keys (or the whole class)
    fixed_key: bytes = b""
    # the answers of the profile's class filters (core/plugins, ``class_filter``) that
    # have something to check for the class: plugin -> answer
    class_filters: dict[str, framework.ClassFilterResult] = field(default_factory=dict)
    # DynamicResources' cycle state of the class's one pod with claims (core.dra.pod's
    # PodDevices), when the caller places it with its devices; its score channel reads it
    devices: Any = None
    # False until Encoder.complete has set spread_selectors, spread_invalid, the *_key
    # fields, affinity_error, prefilter_*, score_error
    complete: bool = True

    def copy(self) -> ClassInfo:
        """The class as a new burst starts it: no pods yet (see Encoder._keep_class)."""
        # Positional: a fifth of dataclasses.replace's time, which checks every field.
        info = ClassInfo(*_CLASS_FIELDS(self))
        info.pods = 0
        info.class_filters = {}
        return info


_CLASS_FIELDS = operator.attrgetter(*[f.name for f in dataclasses.fields(ClassInfo)])


@dataclass
class StaticTables:
    """The kernel's per-class static arrays for a chunk of classes (see core/_place.pxd)."""

    c_static: npt.NDArray[np.int32]
    static_reason: npt.NDArray[np.uint8]
    static_off: npt.NDArray[np.int32]  # S+1: offsets into static_rows
    static_rows: npt.NDArray[np.int32]  # per static row, the rows passing it, ascending
    c_fixed: npt.NDArray[np.int32]
    fixed: npt.NDArray[np.int32]
    # the REVERSE_MAX channel's raw values (one row per sub-signature) and each class's row
    c_taint: npt.NDArray[np.int32]
    taint_count: npt.NDArray[np.int16]
    # the MAX channel's
    c_aff: npt.NDArray[np.int32]
    aff_score: npt.NDArray[np.int32]
    # the further normalised channels: classes x channels, their rows of x_raw (-1: the
    # values are 0 on every row), the rows (>= 0), per channel its weight and kind
    c_x: npt.NDArray[np.int32]
    x_raw: npt.NDArray[np.int32]
    x_w: npt.NDArray[np.int64]
    x_rev: npt.NDArray[np.uint8]
    # per reason code: 1 when its plugin filters after NodePorts and NodeResourcesFit
    late_code: npt.NDArray[np.uint8]


class _ProfilePlan:
    """What an Encoder takes from its profile alone (the registry's plugins it enables,
    their reason codes, score channels and lanes): built once per profile (``_plan_for``)
    rather than for every burst's encoder, and never changed once built."""

    def __init__(self, profile: Profile) -> None:
        self.weights = profile.score_weights
        self.filters = set(profile.filters)
        # The filters whose PreFilter may end a class's attempt (see _prefilter), in order:
        # the registry's PreFilters and the class filters.
        self._prefilters: list[str] = []
        # The registry's PreFilters: name -> (PreFilter, args), and the spec fields they read.
        self.pre_filters: dict[str, tuple[framework.PreFilter, Any]] = {}
        # The registry's node filters: name -> (NodeFilter, args, reason text -> code).
        self.node_filters: dict[str, tuple[framework.NodeFilter, Any, dict[str, int]]] = {}
        # The profile's static filter plugins (core/plugins, ``static_filter``): name ->
        # (function, args, reason code). Profile allows no more than there are codes.
        self.extensions: dict[str, tuple[framework.StaticFilter, Any, int]] = {}
        # The profile's class filter plugins (``class_filter``: the volume filters): name ->
        # (function, args, the spec field it reads, reason text -> code), and code ->
        # (plugin, text) for the failure reports.
        self.class_filters: dict[str, tuple[framework.ClassFilter, Any, str, dict[str, int]]] = {}
        self.class_reasons: dict[int, tuple[str, str]] = {}
        # The profile's filter masks (``filter_masks``): plugin -> per mask (reason code,
        # mask, args, its rows by key). A reason with a code of its own (FIXED_REASONS)
        # keeps it; others take one of the plugin codes, as a class filter's reasons do.
        fixed_codes = {entry: code for code, entry in reasons.FIXED_REASONS.items()}
        self.masks: dict[str, list[tuple[int, framework.FilterMask, Any, dict[bytes, Any]]]] = {}
        self._mask_signature = True  # every mask's rows follow the static rows' signature
        code = _codes.EXTENSION_FIRST
        for name in profile.filters:
            spec = registry.PLUGINS[name]
            if spec.pre_filter is not None:
                self.pre_filters[name] = (spec.pre_filter, profile.args_of(name))
                self._prefilters.append(name)
            if spec.node_filter is not None:
                node_codes: dict[str, int] = {}
                for reason in spec.node_filter.reasons:
                    reason_code = fixed_codes.get((name, reason))
                    if reason_code is None:
                        reason_code = code
                        self.class_reasons[code] = (name, reason)
                        code += 1
                    node_codes[reason] = reason_code
                self.node_filters[name] = (spec.node_filter, profile.args_of(name), node_codes)
            if spec.filter_masks:
                entries: list[tuple[int, framework.FilterMask, Any, dict[bytes, Any]]] = []
                for mask in spec.filter_masks:
                    mask_code = fixed_codes.get((name, mask.reason))
                    if mask_code is None:
                        mask_code = code
                        self.class_reasons[code] = (name, mask.reason)
                        code += 1
                    entries.append((mask_code, mask, profile.args_of(name), {}))
                    self._mask_signature &= mask.signature
                self.masks[name] = entries
            if spec.static_filter is not None:
                self.extensions[name] = (spec.static_filter, profile.args_of(name), code)
                code += 1
            elif spec.class_filter is not None:
                codes: dict[str, int] = {}
                for reason in spec.reasons:
                    codes[reason] = code
                    self.class_reasons[code] = (name, reason)
                    code += 1
                self.class_filters[name] = (
                    spec.class_filter,
                    profile.args_of(name),
                    spec.class_filter_reads,
                    codes,
                )
                self._prefilters.append(name)
        order = {name: i for i, name in enumerate(profile.filters)}
        self._prefilters.sort(key=order.__getitem__)
        self._prefilter_reads = tuple({pf.reads for pf, _ in self.pre_filters.values()})
        # _prefilter's steps, unpacked once (it runs once per class): (name, the PreFilter's
        # function, the field it reads, its args, whether it narrows), or (name, None, ...)
        # for a class filter's answer.
        self._prefilter_steps: list[tuple[str, framework.PreFilterFn | None, str, Any, bool]] = []
        for name in self._prefilters:
            found = self.pre_filters.get(name)
            if found is None:
                self._prefilter_steps.append((name, None, "", None, False))
            else:
                pf, args = found
                self._prefilter_steps.append((name, pf.run, pf.reads, args, pf.narrows))
        self._registry_prefilter_steps = [s for s in self._prefilter_steps if s[1] is not None]
        # The score plugins' PreScore checks, in the profile's score order: (check, args).
        self.pre_scores: list[tuple[framework.PreScore, Any]] = []
        for name, _ in profile.scores:
            pre_score = registry.PLUGINS[name].pre_score
            if pre_score is not None:
                self.pre_scores.append((pre_score, profile.args_of(name)))
        # unpacked once for _prescore_error, which runs once per class: (function, the
        # field it reads, args)
        self._pre_score_steps = [(ps.run, ps.reads, args) for ps, args in self.pre_scores]
        # A plugin filter after NodePorts and NodeResourcesFit (the volume filters, in
        # kube-scheduler's order) is reported on a row only when those two pass it.
        after = max(order.get(n, -1) for n in (names.NODE_PORTS, names.NODE_RESOURCES_FIT))
        self.late_code = np.zeros(256, dtype=np.uint8)
        for name, (_, _, code) in self.extensions.items():
            self.late_code[code] = order[name] > after
        for code, (name, _) in self.class_reasons.items():
            self.late_code[code] = order[name] > after
        # The profile's static score plugins: (function, args, weight), added to ``fixed``.
        self.static_scores: list[tuple[framework.StaticScore, Any, int]] = []
        for name, weight in profile.scores:
            static_score = registry.PLUGINS[name].static_score
            if static_score is not None and weight:
                self.static_scores.append((static_score, profile.args_of(name), weight))
        # The NONE channels, final scores added to ``fixed``: (plugin, channel, args,
        # weight). The normalised channels: the first of each kind has its kernel lane (the
        # fast paths: TaintToleration's and NodeAffinity's in the default profile), kind ->
        # (plugin, channel, args); the further ones are extra channels, in profile order:
        # (plugin, channel, args, weight).
        self.nones: list[tuple[str, ScoreChannel, Any, int]] = []
        self.lanes: dict[Normalise, tuple[str, ScoreChannel, Any]] = {}
        self.extras: list[tuple[str, ScoreChannel, Any, int]] = []
        for name, channel, weight in registry.score_channels(profile.scores):
            if channel.normalise is Normalise.NONE:
                self.nones.append((name, channel, profile.args_of(name), weight))
            elif channel.normalise in self.lanes:
                self.extras.append((name, channel, profile.args_of(name), weight))
            else:
                self.lanes[channel.normalise] = (name, channel, profile.args_of(name))
        self._extra_keys = [
            [channel.key, args, channel.reads, (-1, b"")] for _, channel, args, _ in self.extras
        ]
        self._none_keys = [
            [channel.key, args, channel.reads, (-1, b"")] for _, channel, args, _ in self.nones
        ]
        self.x_w = np.array([w for *_, w in self.extras] or [0], dtype=np.int64)
        self.x_rev = np.array(
            [int(c.normalise is Normalise.REVERSE_MAX) for _, c, _, _ in self.extras] or [0],
            dtype=np.uint8,
        )
        # Per lane, what its key needs, unpacked once: (key function, args, spec field).
        self._rev_key = _key_of(self, Normalise.REVERSE_MAX)
        self._max_key = _key_of(self, Normalise.MAX)


def _key_of(plan: _ProfilePlan, kind: Normalise) -> list[Any] | None:
    """What a lane's keys need, unpacked once: [key function, args, the spec field it
    reads, (state version, the key of classes lacking that field)]."""
    lane = plan.lanes.get(kind)
    if lane is None:
        return None
    _, channel, args = lane
    return [channel.key, args, channel.reads, (-1, b"")]


# (profile, its plan), most recently built last: a scheduler has a profile object per
# scheduler profile; BurstPacking's plain copy and Profile.default() are equal ones.
_plans: list[tuple[Profile, _ProfilePlan]] = []
_PLANS = 8


def _plan_for(profile: Profile) -> _ProfilePlan:
    global _plans
    for known, plan in _plans:
        if known is profile:
            return plan
    for known, plan in _plans:
        if known == profile:
            return plan
    plan = _ProfilePlan(profile)
    # A new list, not an append: a thread iterating the old one sees it whole.
    _plans = [*_plans[-(_PLANS - 1) :], (profile, plan)]
    return plan


class Encoder:
    """Classifies the pods of bursts and builds their static tables against one state.

    Table rows are cached by sub-signature for as long as the state's nodes do not change
    (``state.version``), so consecutive chunks reuse them, and so do later bursts of the
    same profile where the rows depend on the nodes alone (core/class_cache.py).
    """

    def __init__(
        self, state: ClusterState, profile: Profile, devices: PodDevices | None = None
    ) -> None:
        self.state = state
        self.profile = profile
        # DynamicResources' state for the one pod with resource claims being placed
        # (core/dra/pod.py); None: a pod with claims is rejected (NOT_ALLOCATED).
        self.devices = devices
        # The row caches (bound by _bind_tables), by sub-signature, of state.version.
        self._version = -1
        self._static: dict[bytes, npt.NDArray[np.uint8]] = {}
        self._taint: dict[bytes, npt.NDArray[np.int16]] = {}
        self._aff: dict[bytes, npt.NDArray[np.int32]] = {}
        self._fixed: dict[bytes, npt.NDArray[np.int32]] = {}
        self._numeric: dict[str, tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]] = {}
        # rows of required node affinity, by (nodeSelector, required terms): spread's policy
        self._affinity_rows: dict[bytes, npt.NDArray[np.bool_]] = {}
        # per kept static row (by id), the row and the rows passing it
        self._passing: dict[int, tuple[npt.NDArray[np.uint8], npt.NDArray[np.int32]]] = {}
        # the rows of classes _shared refuses, this encoder's alone: table kind -> key -> row
        self._unshared: dict[str, dict[bytes, Any]] = {}
        # completed classes of earlier bursts, by key (_keep_class)
        self._known: dict[bytes, ClassInfo] = {}
        # False once a classify call met more new classes than the kept table may hold
        self._keep_new = True
        self.classes: list[ClassInfo] = []
        self._class_of: dict[bytes, int] = {}
        # Whether a class mounts an in-tree disk (VolumeRestrictions compares those of the
        # pods of one node: core/place.py then places the burst in segments).
        self.has_disks = False
        self._taint_keys: set[str] = set()
        self._taint_keys_version = -1
        plan = _plan_for(profile)
        self.weights, self.filters = plan.weights, plan.filters
        self._prefilters, self.pre_filters = plan._prefilters, plan.pre_filters
        self.node_filters, self.extensions = plan.node_filters, plan.extensions
        self.class_filters, self.class_reasons = plan.class_filters, plan.class_reasons
        # _bind_tables gives each mask its table of rows: this encoder's own dict
        self.masks = dict(plan.masks)
        self._mask_signature, self._prefilter_reads = plan._mask_signature, plan._prefilter_reads
        self.pre_scores, self.late_code = plan.pre_scores, plan.late_code
        self._prefilter_steps = plan._prefilter_steps
        self._registry_prefilter_steps = plan._registry_prefilter_steps
        self._pre_score_steps = plan._pre_score_steps
        self.static_scores, self.nones = plan.static_scores, plan.nones
        self.lanes, self.extras = plan.lanes, plan.extras
        self.x_w, self.x_rev = plan.x_w, plan.x_rev
        # A lane key's last slot caches the key of classes lacking its field, per state
        # version (_lane_key): this encoder's own copies, as another encoder's state may
        # be at the same version number.
        self._extra_keys = [list(lane) for lane in plan._extra_keys]
        self._none_keys = [list(lane) for lane in plan._none_keys]
        self._rev_key = None if plan._rev_key is None else list(plan._rev_key)
        self._max_key = None if plan._max_key is None else list(plan._max_key)
        # per extra channel: key -> (its raw values, whether any is not 0); bound by
        # _bind_tables, and the unshared classes' own
        self._extra_rows: list[dict[bytes, tuple[npt.NDArray[np.int32], bool]]] = []
        self._extra_unshared: list[dict[bytes, tuple[npt.NDArray[np.int32], bool]]] = []
        # Whether rows may be kept across bursts (core/class_cache.py): not those of the
        # one pod placed with its devices (DynamicResources' Filter answer and Score).
        self._share = devices is None
        self._bind_tables()

    def _bind_tables(self) -> None:
        """Take the row caches of the state's current version (class_cache.tables_for;
        tables of this encoder's own when its rows may not be shared)."""
        state = self.state
        if self._share:
            tables = class_cache.tables_for(state, self.profile)
        else:
            tables = class_cache.NodeTables(state.version)
        self._static, self._taint, self._aff = tables.static, tables.taint, tables.aff
        self._fixed, self._numeric = tables.fixed, tables.numeric
        self._passing = tables.passing
        self._affinity_rows = tables.affinity_rows
        self._known = tables.classes
        for name, entries in self.masks.items():
            self.masks[name] = [
                (code, mask, args, tables.masks.setdefault((name, i), {}))
                for i, (code, mask, args, _) in enumerate(entries)
            ]
        self._extra_rows = [tables.extras.setdefault(k, {}) for k in range(len(self.extras))]
        self._unshared = {"static": {}, "fixed": {}, "taint": {}, "aff": {}}
        self._extra_unshared = [{} for _ in self.extras]
        self._version = tables.version

    def _shared(self, info: ClassInfo) -> bool:
        """Whether the class's rows depend on the nodes alone (not on the storage objects
        its class filters read, nor on its pod's devices, which DynamicResources' channel
        reads): kept across bursts."""
        return self._share and not info.class_filters and info.devices is None

    # ------------------------------------------------------------------ classes
    def classify(
        self, pods: Sequence[Mapping[str, Any]], *, complete: bool = True
    ) -> npt.NDArray[np.int32]:
        """The class id of each pod, creating classes for new signatures.

        ``complete`` False: new classes get only what the whole burst needs before the
        kernel starts (namespace, labels, requests, host ports, pod affinity); ``complete``
        adds the rest (done by ``tables`` too), so that core/place.py completes a chunk's
        classes while the kernel runs the chunk before."""
        ids: list[int] = []
        classes = self.classes
        class_of = self._class_of
        first_new = len(classes)
        fresh = 0
        for pod in pods:
            # The whole spec, in one C call: fields that do not matter to scheduling
            # (env, commands) are the same across replicas, so classes stay whole.
            meta = pod.get("metadata") or {}
            key = _ENCODE.encode(
                (
                    meta.get("namespace") or "default",
                    meta.get("labels") or {},
                    meta.get("ownerReferences"),  # default spread selectors follow the owner
                    pod.get("spec"),
                )
            )
            cid = class_of.get(key)
            if cid is None:
                cid = class_of[key] = len(classes)
                known = self._known.get(key)
                if known is None:
                    fresh += 1
                    classes.append(self._class_info(key, pod))
                else:
                    classes.append(known.copy())
            classes[cid].pods += 1
            ids.append(cid)
        if fresh > class_cache.limit(self.state.rows):
            # Kept, they would take the table past its limit and the next burst's trim
            # would empty it: keeping none is the same for later bursts, and spares the
            # collector's pass after the burst (gc_paused) a walk over every kept class
            # and the lists it holds (a burst of 10,000 one-pod classes: 70,000 objects).
            self._keep_new = False
        if complete:
            self.complete(range(first_new, len(classes)))
        return np.array(ids, dtype=np.int32)

    def _class_info(self, key: bytes, pod: Mapping[str, Any]) -> ClassInfo:
        """A new class, from its first pod, with what the whole burst needs before the
        kernel starts (``complete`` adds the rest). This runs once per class of the burst
        (once per pod of a burst of distinct pods), hence each field is read only once."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if spec.get("volumes") and in_tree_disks.disks(spec):
            self.has_disks = True
        affinity = spec.get("affinity") or None
        pod_affinity = None
        if affinity and (affinity.get("podAffinity") or affinity.get("podAntiAffinity")):
            pod_affinity = affinity
        quantity_error = ""
        try:
            fast = _simple_requests(spec)
            if fast is not None:
                requests, nonzero = fast
                nonzero_add = nonzero
            else:
                requests = pod_requests(pod)
                nonzero = _score_requests(pod)
                nonzero_add = pod_nonzero_requests(pod)
            sums = (*requests.values(), *nonzero)  # min/max: no generator frame per class
            if min(sums) < -INT64_MAX - 1 or max(sums) > INT64_MAX:
                raise ValueError("a sum of requests does not fit in int64")
        except ValueError as exc:
            # The API server stores quantities such as 1e400 that no int64 holds: the
            # class fails its attempts with an error instead of failing the whole burst.
            # A quantity it would refuse (bad syntax: only in a file) stays an error.
            _check_quantity_syntax(spec)
            requests, nonzero, nonzero_add = {}, (0, 0), (0, 0)
            quantity_error = f"{names.NODE_RESOURCES_FIT}: {exc}"
        # Most pods bind no host port: host_ports' lists only when a container (or an
        # init container, which may be a sidecar) declares ports.
        declared = False
        for containers in (spec.get("initContainers"), spec.get("containers")):
            for container in containers or ():  # a loop: no generator frame per class
                if container.get("ports"):
                    declared = True
                    break
        ports: list[HostPort] = host_ports(pod) if declared else []
        labels = tuple(sorted((meta.get("labels") or {}).items()))
        return ClassInfo(
            key=key,
            namespace=meta.get("namespace") or "default",
            labels=labels,
            label_map=dict(labels),
            requests=requests,
            nonzero=nonzero,
            nonzero_add=nonzero_add,
            ports=ports,
            spec=spec,
            affinity=pod_affinity,
            owners=list(meta.get("ownerReferences") or ()),
            error=quantity_error,
            complete=False,
        )

    def complete(self, class_ids: Iterable[int]) -> None:
        """Add to these classes what ``classify(complete=False)`` left out: the parsed
        spread selectors, the static tables' sub-signatures, and what ends a
        class's attempt before or at PreScore."""
        classes = self.classes
        for cid in class_ids:
            info = classes[cid]
            if not info.complete:
                self._complete(info)

    def _complete(self, info: ClassInfo) -> None:
        spec = info.spec
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        # Each selector parsed once: the spread PreFilter's check and the class's
        # constraints (core/spread.py) both read this.
        spread_selectors = [
            parse_selector(c.get("labelSelector"))
            for c in spec.get("topologySpreadConstraints") or ()
        ]
        spread_invalid = any(error is not None for _, error in spread_selectors)
        # Tolerations of keys no node taint has tolerate nothing: leaving them out of the
        # keys lets pods that differ only there (one team key each) share static tables.
        # Likewise the filters only see NoSchedule/NoExecute tolerations, the score only
        # PreferNoSchedule ones (an empty effect counts for both).
        hard_tolerations = self._relevant_tolerations(spec.get("tolerations"))
        info.spread_selectors = spread_selectors
        info.spread_invalid = spread_invalid
        info.static_key = _ENCODE.encode(
            (spec.get("nodeName"), spec.get("nodeSelector"), required, hard_tolerations)
        )
        info.rev_key = self._lane_key(self._rev_key, info)
        info.max_key = self._lane_key(self._max_key, info)
        if self._extra_keys:
            info.extra_keys = tuple(self._lane_key(lane, info) for lane in self._extra_keys)
        none_keys = self._none_keys
        if len(none_keys) == 1:
            key, args, reads, _ = none_keys[0]
            if key is not None and not reads:  # ImageLocality's: one call, once per class
                info.fixed_key = _ENCODE.encode(key(args, self, info))
            else:
                info.fixed_key = self._lane_key(none_keys[0], info)
        elif none_keys:
            info.fixed_key = b"\0".join([self._lane_key(lane, info) for lane in none_keys])
        else:
            info.fixed_key = _NONE_KEY  # no NONE channel: fixed rows differ by const only
        info.complete = True
        if self.extensions or not self._mask_signature:
            # A static filter plugin may read any part of the signature (labels, say).
            info.static_key = info.key
        if self.class_filters:
            self._class_filters(info)
        class_answers = info.class_filters  # empty for most classes: no generator then
        if self.static_scores or (
            class_answers and any(a.scores is not None for a in class_answers.values())
        ):
            # so may a static score or a class filter's score (the fixed row)
            info.fixed_key = info.key
        if info.error:  # a quantity no int64 holds (_class_info)
            info.static_key = b"prefilter"  # every row narrowed, as _prefilter does
        if self.devices is not None and spec.get("resourceClaims"):
            info.static_key = info.key + b"/devices"  # the one pod's own Filter answer
            info.devices = self.devices
        pod_affinity = info.affinity
        if pod_affinity is not None:
            info.affinity_error = pod_affinity_error(spec)
        if self._prefilters:
            asks = bool(info.class_filters)
            for reads in self._prefilter_reads:  # a loop: this runs once per class
                if asks:
                    break
                asks = bool(spec.get(reads))
            if asks:
                self._prefilter(info)
        if self.pre_scores and not (
            info.error or info.prefilter_message  # the attempt ends before PreScore
        ):
            info.score_error = self._prescore_error(info)
        self._keep_class(info)

    def _keep_class(self, info: ClassInfo) -> None:
        """Keep a completed class for later bursts (core/class_cache.py) when all of it
        follows from its key, the profile and the nodes: not when it has volumes (the
        class filters and the disk check read the storage objects) or resource claims, nor
        when its burst brought more new classes than the table may hold (``classify``)."""
        spec = info.spec
        if (
            self._share
            and self._keep_new
            and not (spec.get("volumes") or spec.get("resourceClaims"))
            and not info.class_filters
            and info.devices is None
        ):
            self._known[info.key] = info.copy()

    def _class_filters(self, info: ClassInfo) -> None:
        """Ask the profile's class filters about the class, those whose spec field it has
        (a pod without volumes asks none). Their answers read the storage objects, which
        differ from class to class: the class keeps a static row of its own."""
        spec = info.spec
        storage = self.state.storage
        for name, (class_filter, args, reads, _) in self.class_filters.items():
            if spec.get(reads):
                answer = class_filter(args, self, info, storage)
                if answer is not None:
                    info.class_filters[name] = answer
        if info.class_filters:
            info.static_key = info.key

    def _prefilter(self, info: ClassInfo) -> None:
        """What ends the class's attempt before any node is tried, the first filter's
        PreFilter in the profile's order deciding (as the reference's PreFilter run): a
        plugin's PreFilter (``PluginSpec.pre_filter``: NodeAffinity's name conflict,
        DynamicResources' claims, InterPodAffinity's unparsable terms, PodTopologySpread's
        invalid DoNotSchedule selector) or a class filter's: a rejection
        (``prefilter_message``) or an error (``error``). Every row is then narrowed (see
        ``_static_reason``), so the kernel places none of the class's pods. A PreFilter
        may instead keep some rows only (``narrowed``)."""
        spec = info.spec
        class_answers = info.class_filters
        if info.prefilter_message or info.error:
            # Set before (a quantity no int64 holds, _class_info): as when a step ends the
            # run, the run ends after the first step, which still answers.
            steps = self._prefilter_steps[:1]
        elif class_answers:
            steps = self._prefilter_steps
        else:  # no class filter answered: only the registry's PreFilters may
            steps = self._registry_prefilter_steps
        for name, run, reads, args, narrows in steps:
            if run is not None:
                if not spec.get(reads):
                    continue
                answer = run(args, self, info)
                if answer is None:
                    continue
                if answer.message:
                    info.prefilter_message = answer.message
                    info.prefilter_plugin = name
                elif answer.error:
                    info.error = answer.error
                elif answer.keep is not None and narrows:
                    kept = answer.keep
                    info.narrowed = kept if info.narrowed is None else info.narrowed & kept
            elif name in class_answers:
                found = class_answers[name]
                if found.prefilter_message:
                    info.prefilter_message = found.prefilter_message
                    info.prefilter_plugin = name
                elif found.error:
                    info.error = found.error
            else:
                continue
            if info.prefilter_message or info.error:
                break
        if info.prefilter_message or info.error:
            # All its rows are narrowed whatever the nodes: one static row serves all.
            info.static_key = b"prefilter"

    def _prescore_error(self, info: ClassInfo) -> str:
        """The error that fails the attempts of the class's pods at PreScore, or "".

        The first score plugin in the profile's order whose PreScore check
        (``PluginSpec.pre_score``) fails decides: PodTopologySpread with an invalid selector
        in one of the pod's own ScheduleAnyway constraints, InterPodAffinity with an
        invalid term (its PreFilter rejects such a pod first when the filter is enabled)."""
        spec = info.spec
        for run, reads, args in self._pre_score_steps:
            if spec.get(reads):
                error = run(args, self, info)
                if error is not None:
                    return error
        return ""

    def _lane_key(self, lane: list[Any] | None, info: ClassInfo) -> bytes:
        """The sub-signature of the class's raw values in a lane's channel."""
        if lane is None:
            return _NONE_KEY  # no such channel: one row of zeros serves every class
        key, args, reads, absent = lane
        if key is None:
            return info.key
        if reads and not info.spec.get(reads):
            version = self.state.version
            if absent[0] == version:  # the same for every class lacking the field
                return absent[1]
            lane[3] = (version, self._key_value(key(args, self, info)))
            return lane[3][1]
        return self._key_value(key(args, self, info))

    @staticmethod
    def _key_value(value: Any) -> bytes:
        # The two commonest keys without an encoder call (the same bytes it would give).
        if value is None:
            return _NONE_KEY
        if value == [] and type(value) is list:
            return _EMPTY_LIST_KEY
        return _ENCODE.encode(value)

    def taint_keys(self) -> set[str]:
        """The keys of the state's taints and the unschedulable one (NodeTable.taint_keys)."""
        if self._taint_keys_version != self.state.version:
            self._taint_keys = {taint[0] for taint in self.state.taint_list}
            self._taint_keys.add(UNSCHEDULABLE_TAINT[0])
            self._taint_keys_version = self.state.version
        return self._taint_keys

    def taint_counts(
        self, counted: Callable[[tuple[str, str, str]], bool]
    ) -> npt.NDArray[np.int64]:
        """Per row, its taints that ``counted`` holds (NodeTable.taint_counts)."""
        state = self.state
        bad = [tid for tid, taint in enumerate(state.taint_list) if counted(taint)]
        if not bad:
            return np.zeros(state.rows, dtype=np.int64)
        return state.taints[: state.rows, bad].sum(axis=1, dtype=np.int64)

    def _relevant_tolerations(self, tolerations: Any) -> list[Mapping[str, Any]]:
        """The tolerations the filters see (not PreferNoSchedule) that may tolerate a
        taint of the state (or the unschedulable one)."""
        if not tolerations:
            return []
        keys = self.taint_keys()
        hard: list[Mapping[str, Any]] = []
        for toleration in tolerations:
            key = toleration.get("key")
            if key and key not in keys:
                continue
            if toleration.get("effect") != "PreferNoSchedule":
                hard.append(toleration)
        return hard

    # ---------------------------------------------------------------- tables
    def tables(self, class_ids: Sequence[int]) -> StaticTables:
        """Static tables for the given classes, rows deduplicated by sub-signature."""
        self.complete(class_ids)
        if self._version != self.state.version:
            self._bind_tables()
        rows = self.state.rows
        classes = [self.classes[cid] for cid in class_ids]
        parts: dict[str, tuple[dict[bytes, int], list[np.ndarray]]] = {}
        index: dict[str, npt.NDArray[np.int32]] = {}
        tables: list[tuple[str, dict[bytes, Any], Callable[[ClassInfo], np.ndarray]]] = [
            ("static", self._static, self._static_reason),
            ("fixed", self._fixed, self._fixed_with_const),
            ("taint", self._taint, self._reverse_max_raw),
            ("aff", self._aff, self._max_raw),
        ]
        c_x = x_raw = None
        for kind, cache, build in tables:
            if kind == "fixed":
                # The extra channels after the static filters (DynamicResources' score reads
                # what its Filter found) and before the fixed row (their constants join it).
                c_x, x_raw = self._extra_tables(classes)
            seen: dict[bytes, int] = {}
            arrays: list[np.ndarray] = []
            rows_of: list[int] = []
            sub_key = _SUB_KEYS[kind]
            unshared = self._unshared[kind]
            for info in classes:
                key = sub_key(info)
                row = seen.get(key)
                if row is None:
                    store = cache if self._shared(info) else unshared
                    array = store.get(key)
                    if array is None:
                        array = store[key] = build(info)
                    row = seen[key] = len(arrays)
                    arrays.append(array)
                rows_of.append(row)
            parts[kind] = (seen, arrays)
            index[kind] = np.array(rows_of, dtype=np.int32)

        def stack(kind: str, dtype: Any) -> np.ndarray:
            arrays = parts[kind][1]
            if not arrays:
                return np.zeros((1, rows), dtype=dtype)
            return np.ascontiguousarray(np.vstack(arrays), dtype=dtype)

        assert c_x is not None and x_raw is not None
        static_reason = stack("static", np.uint8)
        # The rows passing a kept static row are kept with it (by the row's identity: the
        # kept row is never changed, and the entry holds it alive so its id is not reused).
        # Only rows of the shared tables: an unshared class's rows are built per burst.
        known, shared = self._passing, self._static
        passing = []
        for key, at in parts["static"][0].items():
            array = parts["static"][1][at]
            found = known.get(id(array))
            if found is None or found[0] is not array:
                found = (array, np.flatnonzero(array == 0).astype(np.int32))
                if shared.get(key) is array:
                    known[id(array)] = found
            passing.append(found[1])
        static_off = np.zeros(len(passing) + 1, dtype=np.int32)
        static_off[1:] = np.cumsum([len(p) for p in passing])
        return StaticTables(
            c_static=index["static"],
            static_reason=static_reason,
            static_off=static_off,
            static_rows=np.concatenate(passing) if static_off[-1] else np.zeros(1, np.int32),
            c_fixed=index["fixed"],
            fixed=stack("fixed", np.int32),
            c_taint=index["taint"],
            taint_count=stack("taint", np.int16),
            c_aff=index["aff"],
            aff_score=stack("aff", np.int32),
            c_x=c_x,
            x_raw=x_raw,
            x_w=self.x_w,
            x_rev=self.x_rev,
            late_code=self.late_code,
        )

    # ---------------------------------------------------------- static filters
    def _static_reason(self, info: ClassInfo) -> npt.NDArray[np.uint8]:
        state, spec = self.state, info.spec
        rows = state.rows
        out = np.zeros(rows, dtype=np.uint8)
        todo = state.present[:rows].astype(bool)
        out[~todo] = R_ABSENT
        if info.prefilter_message or info.error:
            out[todo] = R_NARROWED
            return out
        narrowed = info.narrowed
        if narrowed is not None:
            out[todo & ~narrowed] = R_NARROWED
            todo &= narrowed

        def reject(failing: npt.NDArray[np.bool_], code: int) -> None:
            # copyto(where=) and ^= (hit lies within todo) spare a boolean index and a
            # temporary per filter: this runs once per class, 3-4 times, over every row.
            nonlocal todo
            hit = todo & failing
            np.copyto(out, np.uint8(code), where=hit)
            todo ^= hit

        for name in self.profile.filters:
            if name in self.masks:
                for code, mask, args, cache in self.masks[name]:
                    failing = self._mask_rows(mask, args, cache, info)
                    if failing is not None:
                        reject(failing, code)
            elif name in self.extensions:
                static_filter, args, code = self.extensions[name]
                reject(~static_filter(args, self, info), code)
            elif name in info.class_filters:
                reason_codes = self.class_filters[name][3]
                for reason, failing in info.class_filters[name].failing:
                    reject(failing, reason_codes[reason])
            elif name in self.node_filters:
                node_filter, args, reason_codes = self.node_filters[name]
                answer = (
                    node_filter.run(args, self, info, todo) if spec.get(node_filter.reads) else None
                )
                if answer is not None and answer.error:  # a Filter error ends the attempt
                    info.error = answer.error
                    out[todo] = R_NARROWED
                    return out
                for reason, failing in answer.failing if answer is not None else ():
                    reject(failing, reason_codes[reason])
        return out

    def _mask_rows(
        self, mask: framework.FilterMask, args: Any, cache: dict[bytes, Any], info: ClassInfo
    ) -> npt.NDArray[np.bool_] | None:
        """A filter mask's failing rows for the class, once per distinct key and state."""
        key = info.key if mask.key is None else self._key_value(mask.key(args, self, info))
        if key in cache:
            return cache[key]
        failing = cache[key] = mask.failing(args, self, info)
        return failing

    def required_affinity(self, info: ClassInfo) -> npt.NDArray[np.bool_]:
        """Rows matching the pod's nodeSelector and required node affinity (no added one)."""
        spec = info.spec
        affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        key = _ENCODE.encode((spec.get("nodeSelector"), required))
        match = self._affinity_rows.get(key)
        if match is not None:
            return match
        match = np.ones(self.state.rows, dtype=bool)
        for label, value in (spec.get("nodeSelector") or {}).items():
            match &= self.label_in(label, [value])
        if required is not None:
            match &= self._node_selector(required)
        self._affinity_rows[key] = match
        return match

    # ---------------------------------------------------------- node selectors
    def label_in(self, key: str, values: Sequence[str]) -> npt.NDArray[np.bool_]:
        rows = self.state.rows
        column = self.state.label_columns.get(key)
        if column is None:
            return np.zeros(rows, dtype=bool)
        ids = self.state.label_value_ids[key]
        wanted = [ids[v] for v in values if v in ids]
        if not wanted:
            return np.zeros(rows, dtype=bool)
        if len(wanted) == 1:
            return column[:rows] == wanted[0]
        return np.isin(column[:rows], wanted)

    def has_label(self, key: str) -> npt.NDArray[np.bool_]:
        column = self.state.label_columns.get(key)
        if column is None:
            return np.zeros(self.state.rows, dtype=bool)
        return column[: self.state.rows] >= 0

    def _numeric_label(self, key: str) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """Per row: whether label ``key`` holds an integer, and that integer."""
        cached = self._numeric.get(key)
        if cached is not None:
            return cached
        rows = self.state.rows
        column = self.state.label_columns.get(key)
        if column is None:
            result = (np.zeros(rows, dtype=bool), np.zeros(rows, dtype=np.int64))
        else:
            values = self.state.label_values[key]
            valid = np.zeros(len(values) + 1, dtype=bool)
            numbers = np.zeros(len(values) + 1, dtype=np.int64)
            for vid, text in enumerate(values):
                number = None if text is None else _parse_int64(text)
                if number is not None:
                    valid[vid], numbers[vid] = True, number
            ids = column[:rows]
            ids = np.where(ids < 0, len(values), ids)  # the extra slot: not a number
            result = (valid[ids], numbers[ids])
        self._numeric[key] = result
        return result

    def _requirement(
        self, req: Mapping[str, Any], field: bool, by_name: bool = True
    ) -> npt.NDArray[np.bool_]:
        rows = self.state.rows
        key = req.get("key", "")
        op = req.get("operator")
        values = list(req.get("values") or ())
        if field:
            # Only metadata.name is a node field a selector can use, with In / NotIn.
            if key != "metadata.name" or op not in ("In", "NotIn") or len(values) != 1:
                return np.zeros(rows, dtype=bool)
            if not by_name:  # a node known by its labels alone has no fields to match
                return np.ones(rows, dtype=bool)
            match = np.zeros(rows, dtype=bool)
            row = self.state.row_of.get(values[0])
            if row is not None:
                match[row] = True
            return match if op == "In" else ~match
        if op == "In":
            return self.label_in(key, values)
        if op == "NotIn":
            return ~self.label_in(key, values)
        if op == "Exists":
            return self.has_label(key)
        if op == "DoesNotExist":
            return ~self.has_label(key)
        if op in ("Gt", "Lt") and len(values) == 1:
            bound = _parse_int64(values[0])
            if bound is None:
                return np.zeros(rows, dtype=bool)
            valid, numbers = self._numeric_label(key)
            return valid & (numbers > bound if op == "Gt" else numbers < bound)
        return np.zeros(rows, dtype=bool)

    def _term(self, term: Mapping[str, Any], by_name: bool = True) -> npt.NDArray[np.bool_]:
        """A node selector term: its requirements ANDed; an empty term matches nothing."""
        exprs = term.get("matchExpressions") or ()
        fields = term.get("matchFields") or ()
        match = np.full(self.state.rows, bool(exprs or fields))
        for req in exprs:
            match &= self._requirement(req, field=False)
        for req in fields:
            match &= self._requirement(req, field=True, by_name=by_name)
        return match

    def node_names(self) -> Sequence[str | None]:
        """Each row's node name (NodeTable.node_names)."""
        return self.state.names[: self.state.rows]

    def name_in(self, names: Set[str]) -> npt.NDArray[np.bool_]:
        """Rows whose node has one of ``names`` (NodeTable.name_in)."""
        match = np.zeros(self.state.rows, dtype=bool)
        for name in names:
            row = self.state.row_of.get(name)
            if row is not None:
                match[row] = True
        return match

    def labels_of(self, row: int) -> Mapping[str, str]:
        """One row's node labels (NodeTable.labels_of)."""
        return self.state.node_labels[row]

    def unschedulable(self) -> npt.NDArray[np.bool_]:
        """Rows whose node is cordoned (NodeTable.unschedulable)."""
        return self.state.unschedulable[: self.state.rows].astype(bool)

    def labels_match(self, selector: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """Rows matching a node selector by their labels alone (NodeTable.labels_match)."""
        match = np.zeros(self.state.rows, dtype=bool)
        for term in selector.get("nodeSelectorTerms") or ():
            match |= self._term(term, by_name=False)
        return match

    def _node_selector(self, selector: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """Required node affinity: its terms ORed (no terms: no node)."""
        match = np.zeros(self.state.rows, dtype=bool)
        for term in selector.get("nodeSelectorTerms") or ():
            match |= self._term(term)
        return match

    # -------------------------------------------------------------- static scores
    def term_match(self, term: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """Rows matching one node selector term (NodeTable.term_match)."""
        return self._term(term)

    def _extra_tables(
        self, classes: Sequence[ClassInfo]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """The extra channels' rows for these classes (c_x, x_raw), and each class's
        ``fixed_const``: a channel whose values are 0 on every row is no row of x_raw
        (-1) but a constant, 100 x its weight when REVERSE_MAX, 0 when MAX."""
        extras = self.extras
        c_x = np.full((len(classes), len(extras)), -1, dtype=np.int32)
        if not extras:
            return c_x, np.zeros((1, max(1, self.state.rows)), dtype=np.int32)
        arrays: list[npt.NDArray[np.int32]] = []
        seen: dict[tuple[int, bytes], int] = {}
        for i, info in enumerate(classes):
            const = 0
            rows = self._extra_rows if self._shared(info) else self._extra_unshared
            for k, (name, channel, args, weight) in enumerate(extras):
                key = info.extra_keys[k]
                cached = rows[k].get(key)
                if cached is None:
                    raw = self._channel_raw(name, channel, args, info, np.int32)
                    cached = rows[k][key] = (raw, bool(raw.any()))
                if not cached[1]:
                    if channel.normalise is Normalise.REVERSE_MAX:
                        const += framework.MAX_NODE_SCORE * weight
                    continue
                row = seen.get((k, key))
                if row is None:
                    row = seen[(k, key)] = len(arrays)
                    arrays.append(cached[0])
                c_x[i, k] = row
            info.fixed_const = const
        if not arrays:
            return c_x, np.zeros((1, max(1, self.state.rows)), dtype=np.int32)
        return c_x, np.ascontiguousarray(np.vstack(arrays), dtype=np.int32)

    def _fixed_with_const(self, info: ClassInfo) -> npt.NDArray[np.int32]:
        fixed = self._fixed_score(info)
        return fixed + np.int32(info.fixed_const) if info.fixed_const else fixed

    def _reverse_max_raw(self, info: ClassInfo) -> npt.NDArray[np.int16]:
        return self._lane_raw(Normalise.REVERSE_MAX, info, np.int16)

    def _max_raw(self, info: ClassInfo) -> npt.NDArray[np.int32]:
        return self._lane_raw(Normalise.MAX, info, np.int32)

    def _lane_raw(self, kind: Normalise, info: ClassInfo, dtype: Any) -> Any:
        """The class's raw values in the channel of ``kind``, in the kernel's dtype for
        it (zeros without such a channel)."""
        lane = self.lanes.get(kind)
        if lane is None:
            return np.zeros(self.state.rows, dtype=dtype)
        name, channel, args = lane
        return self._channel_raw(name, channel, args, info, dtype)

    def _channel_raw(
        self, name: str, channel: ScoreChannel, args: Any, info: ClassInfo, dtype: Any
    ) -> Any:
        """A channel's raw values for the class, checked to fit ``dtype`` (not negative)."""
        raw = np.asarray(channel.raw(args, self, info), dtype=np.int64)
        top = np.iinfo(dtype).max
        if raw.size and not 0 <= raw.min() <= raw.max() <= top:
            raise ValueError(f"{name}: a raw score outside 0..{top}")
        return raw.astype(dtype)

    def _fixed_score(self, info: ClassInfo) -> npt.NDArray[np.int32]:
        """The weighted scores no placement changes: static scores and NONE channels."""
        fixed = np.zeros(self.state.rows, dtype=np.int32)
        for static_score, args, weight in self.static_scores:
            scores = np.asarray(static_score(args, self, info), dtype=np.int64)
            fixed = self._add_final(fixed, scores, weight, static_score.__module__)
        for name, channel, args, weight in self.nones:
            fixed = self._add_final(fixed, np.asarray(channel.raw(args, self, info)), weight, name)
        for name, answer in info.class_filters.items():
            # A class filter's own score (VolumeBinding's capacity score), from the
            # storage as its Filter read it for this class.
            weight = self.weights.get(name, 0)
            if answer.scores is not None and weight:
                fixed = fixed + (weight * answer.scores).astype(np.int32)
        return fixed

    @staticmethod
    def _add_final(
        fixed: npt.NDArray[np.int32], scores: npt.NDArray[Any], weight: int, plugin: str
    ) -> npt.NDArray[np.int32]:
        """``fixed`` plus a plugin's final scores, weighted, checked to be in 0..100."""
        scores = scores.astype(np.int64, copy=False)
        if scores.size and not 0 <= scores.min() <= scores.max() <= framework.MAX_NODE_SCORE:
            # kube-scheduler fails the attempt of a plugin scoring out of range.
            raise ValueError(f"{plugin}: a score outside 0..100")
        return fixed + (weight * scores).astype(np.int32)

    # ------------------------------------------------------------------ images
    def image_rows(self, image: str) -> tuple[npt.NDArray[np.int64], int, int]:
        """The rows holding ``image``, its size and its holders (NodeTable.image_rows)."""
        holders = self.state.images.get(image)
        if not holders:
            return np.zeros(0, dtype=np.int64), 0, 0
        rows = np.fromiter(holders.keys(), np.int64, len(holders))
        return rows, self.state.image_sizes[image], len(holders)

    def node_count(self) -> int:
        """How many nodes the state has (NodeTable.node_count)."""
        return self.state.node_count


@dataclass
class PortTable:
    """Interned (ip, protocol, port) keys of a burst and, per class, its clashes."""

    keys: dict[HostPort, int] = field(default_factory=dict)

    def key(self, port: HostPort) -> int:
        kid = self.keys.get(port)
        if kid is None:
            kid = len(self.keys)
            self.keys[port] = kid
        return kid

    def clashes(self, port: HostPort) -> list[int]:
        """Keys that a pod taking ``port`` cannot share a node with (NodePorts)."""
        wild = "0.0.0.0"
        return [
            kid
            for other, kid in self.keys.items()
            if other.protocol == port.protocol
            and other.port == port.port
            and (other.host_ip == port.host_ip or wild in (other.host_ip, port.host_ip))
        ]


# tracked resource name -> quantity -> units (None: not an exact integer); names that are
# not tracked never get an entry, so a hit needs no name check
_UNITS: dict[str, dict[Any, int | None]] = {}
_UNITS_PER_NAME = 100_000
_UNPARSED: Any = object()  # a cache miss (None is a cached answer)
_SIMPLE_QUANTITY = re.compile(r"^([0-9]{1,15})(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
_SUFFIX_FACTORS = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
}


def _units(name: str, quantity: Any) -> int | None:
    """A quantity of tracked resource ``name`` in the scheduler's units when that is an
    exact integer, else None; each distinct quantity is parsed once."""
    known = _UNITS.setdefault(name, {})
    units = known.get(quantity, _UNPARSED)
    if units is _UNPARSED:
        units = _parse_units(name, quantity)
        if len(known) < _UNITS_PER_NAME:
            known[quantity] = units
    return units


def _parse_units(name: str, quantity: Any) -> int | None:
    simple = _SIMPLE_QUANTITY.match(quantity) if isinstance(quantity, str) else None
    if simple is not None:
        # Digits with an optional suffix: exact integer arithmetic, no Fraction needed.
        number, suffix = int(simple.group(1)), simple.group(2) or ""
        scale = 1000 if name == CPU else 1
        if suffix == "m":
            whole, rest = divmod(number * scale, 1000)
            units = whole if rest == 0 else None
        else:
            units = number * scale * _SUFFIX_FACTORS[suffix]
        if units is None or units < 1 << 63:  # beyond int64: the full parser decides
            return units
    try:
        amount = parse_quantity(quantity) * (1000 if name == CPU else 1)
    except ValueError:
        amount = None
    return int(amount) if amount is not None and amount.denominator == 1 else None


def _simple_requests(spec: Mapping[str, Any]) -> tuple[dict[str, int], tuple[int, int]] | None:
    """Requests of the common pod (containers only, whole-unit quantities), fast.

    Summing whole units is then exact, so this gives what core.resources computes, with
    each distinct quantity string parsed once. Anything else (init containers, overhead,
    pod-level resources, fractional units) returns None: the full rules apply.
    """
    if spec.get("initContainers") or spec.get("overhead") or spec.get("resources"):
        return None
    out = {CPU: 0, MEMORY: 0, EPHEMERAL_STORAGE: 0}
    cpu_score = memory_score = 0
    for container in spec.get("containers") or ():
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu = memory = None
        for name, quantity in requests.items():
            known = _UNITS.get(name)
            units = _UNPARSED if known is None else known.get(quantity, _UNPARSED)
            if units is _UNPARSED:  # not seen yet, or not a tracked resource
                if not (name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name)):
                    continue
                units = _units(name, quantity)
            if units is None:
                return None
            out[name] = out.get(name, 0) + units
            if name == CPU:
                cpu = units
            elif name == MEMORY:
                memory = units
        cpu_score += DEFAULT_MILLI_CPU_REQUEST if cpu is None else cpu
        memory_score += DEFAULT_MEMORY_REQUEST if memory is None else memory
    return out, (cpu_score, memory_score)


def _check_quantity_syntax(spec: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` for a request, limit or overhead that is no quantity at all."""
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        resources = container.get("resources") or {}
        for amounts in (resources.get("requests"), resources.get("limits")):
            for amount in (amounts or {}).values():
                parse_quantity(amount)
    for amounts in (spec.get("overhead"), (spec.get("resources") or {}).get("requests")):
        for amount in (amounts or {}).values():
            parse_quantity(amount)


def _score_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """cpu/memory as NodeResourcesFit's score sees the incoming pod (100m/200Mi defaults)."""
    requests = pod_requests(pod, nonzero_defaults=True)
    return requests[CPU], requests[MEMORY]


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): None unless a plain int64 decimal."""
    if not _INT.match(text):
        return None
    number = int(text)
    if not -(1 << 63) <= number < (1 << 63):
        return None
    return number


def is_scalar_column(name: str) -> bool:
    """Resource scores skip a scalar resource the pod does not request."""
    return name not in (CPU, MEMORY) and is_scalar_resource(name)
