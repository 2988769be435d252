"""What every plugin shares: extension points, status codes, cluster events, args errors.

This is kubesalvo's small version of kube-scheduler's ``framework`` package:

* the extension points, with the configuration's field names (``preFilter``, ``score``);
* :class:`Code`, the status a filter failure carries (preemption only tries nodes whose
  failure is ``UNSCHEDULABLE``);
* :class:`ClusterEvent`: a resource and a set of action bits. A plugin registers the
  events after which a pod it rejected may fit (``EVENTS`` in its module); an event
  matches a registration when the resources agree (or either is the wildcard) and the
  action bits overlap;
* :class:`FieldError` and :class:`ArgsError`: an args model's ``problems()`` lists every
  invalid field with its path below ``pluginConfig[i].args`` and the accepted values, in
  apimachinery's words; the config loader reports them under the file's path, a direct
  construction raises :class:`ArgsError` with them;
* :class:`ScoreChannel`: a score computed per class of pods by its plugin's module, with
  the normalisation the kernel applies over each pod's feasible nodes;
* :class:`PluginSpec`: one plugin's entry in the registry;
* kube-scheduler's FitError text, rendered from reason counts at the edge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from enum import Enum, IntFlag, StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "FORCE_ACTIVATE",
    "NODE_ADD",
    "NODE_DELETE",
    "POINTS",
    "UNSCHEDULABLE_TIMEOUT",
    "ActionType",
    "ArgsError",
    "ClassFilter",
    "ClassFilterResult",
    "ClusterEvent",
    "Code",
    "ErrorKind",
    "EventResource",
    "FieldError",
    "FilterMask",
    "HintFn",
    "NodeFilter",
    "NodeFilterResult",
    "NodeTable",
    "Normalise",
    "ParsedPodClass",
    "PerNode",
    "PerNodeFilter",
    "PerNodeScore",
    "PluginSpec",
    "PodClass",
    "PreFilter",
    "PreFilterResult",
    "PreScore",
    "ProfileError",
    "ResourceSpec",
    "ScoreChannel",
    "StaticFilter",
    "StaticScore",
    "check",
    "event_label",
    "fit_error_message",
    "non_negative",
    "post_filter_message",
    "prefilter_narrowing_reason",
    "success_message",
    "tolerates",
]

# Extension points, with kube-scheduler's configuration field names.
PRE_ENQUEUE = "preEnqueue"
QUEUE_SORT = "queueSort"
PRE_FILTER = "preFilter"
FILTER = "filter"
POST_FILTER = "postFilter"
PRE_SCORE = "preScore"
SCORE = "score"
RESERVE = "reserve"
PERMIT = "permit"
PRE_BIND = "preBind"
BIND = "bind"
POST_BIND = "postBind"
# In the order kube-scheduler's configuration lists them.
POINTS: tuple[str, ...] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
)

# Scores are normalised to [0, MAX_NODE_SCORE] before weighting (framework.MaxNodeScore).
MAX_NODE_SCORE = 100
# The largest weight a score plugin may be given, and the largest total weight.
MAX_PLUGIN_WEIGHT = 100
MAX_TOTAL_SCORE = (1 << 63) - 1


class Code(Enum):
    """The status code a filter failure carries; preemption only tries UNSCHEDULABLE nodes."""

    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


# --- args models: field errors ---------------------------------------------------------


class ErrorKind(Enum):
    """The kinds of field error, with apimachinery's wording."""

    INVALID = "Invalid value"
    UNSUPPORTED = "Unsupported value"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    FORBIDDEN = "Forbidden"
    UNKNOWN_FIELD = "Unknown field"


def _render(value: Any) -> str:
    # Go's field errors quote strings and print numbers bare; JSON does the same.
    try:
        return json.dumps(value, sort_keys=True)
    except TypeError:
        return repr(value)


@dataclass(frozen=True)
class FieldError:
    """One refused field: where it is, what kind of problem, and what would be accepted."""

    path: str
    kind: ErrorKind
    value: Any = None
    detail: str = ""
    accepted: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = self.path or "<root>"
        if self.kind is ErrorKind.REQUIRED or self.kind is ErrorKind.FORBIDDEN:
            text = f"{where}: {self.kind.value}"
        else:
            text = f"{where}: {self.kind.value}: {_render(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        if self.accepted:
            label = (
                "supported fields" if self.kind is ErrorKind.UNKNOWN_FIELD else "supported values"
            )
            text += f": {label}: " + ", ".join(_render(a) for a in self.accepted)
        return text

    def under(self, path: str) -> FieldError:
        """The same error with its path below ``path``."""
        if not path:
            return self
        joined = path + ("" if self.path.startswith("[") else ".") + self.path
        return FieldError(
            joined if self.path else path, self.kind, self.value, self.detail, self.accepted
        )


class ProfileError(ValueError):
    """An invalid profile or args value; ``path`` is where it sits in the configuration."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class ArgsError(ProfileError):
    """An args model refused at construction; ``problems`` holds every invalid field."""

    def __init__(self, problems: list[FieldError]) -> None:
        first = problems[0]
        super().__init__(first.path, str(first).removeprefix(f"{first.path}: "))
        self.problems = problems


def non_negative(path: str, value: float, detail: str) -> list[FieldError]:
    """The one problem of a duration or count field that must not be negative, if it is."""
    return [] if value >= 0 else [FieldError(path, ErrorKind.INVALID, value, detail)]


def check(problems: list[FieldError]) -> None:
    """Raise :class:`ArgsError` when an args model found problems with itself."""
    if problems:
        raise ArgsError(problems)


@dataclass(frozen=True)
class ResourceSpec:
    """A resource a score looks at, with its weight (NodeResourcesFit, BalancedAllocation)."""

    name: str
    weight: int = 1


# --- cluster events ---------------------------------------------------------------------


class ActionType(IntFlag):
    """What happened to an object; the Update* bits say what an update changed."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    # A change of taints or of spec.unschedulable (both decide NodeUnschedulable-like fits).
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    # Any other update of a resource that has no finer bits.
    UPDATE_OTHER = 1 << 12

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


class EventResource(StrEnum):
    """The kinds of object whose events can make a rejected pod schedulable."""

    POD = "Pod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    WILDCARD = "*"


@dataclass(frozen=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        if EventResource.WILDCARD in (self.resource, registered.resource):
            return True
        return self.resource == registered.resource and bool(self.action & registered.action)

    def __str__(self) -> str:
        return self.label or event_label(self.resource, self.action)


def event_label(resource: EventResource, action: ActionType) -> str:
    """kube-scheduler's event label: the resource, then the action in CamelCase."""
    words = (action.name or "Unknown").split("_")
    return resource.value + "".join(w.capitalize() for w in words)


# A hint: given the parked pod, the event and the old and new objects, may it help?
HintFn = Callable[[Any, ClusterEvent, Any, Any], bool]

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
# A pod bound to a node appeared, or went away (deleted, or finished: Succeeded/Failed
# pods leave the node's accounting as deleted ones do).
ASSIGNED_POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")


# --- static plugins: what they read ----------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: tuple[str, str, str]) -> bool:
    """Whether a toleration tolerates a (key, value, effect) taint (upstream ToleratesTaint;
    TaintToleration and NodeUnschedulable share the rule)."""
    key, value, effect = taint
    t_effect = toleration.get("effect") or ""
    if t_effect and t_effect != effect:
        return False
    t_key = toleration.get("key") or ""
    if t_key and t_key != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == value
    return False


class NodeTable(Protocol):
    """The nodes as a static plugin sees them: one answer per ClusterState row, at once.

    The encoder implements it over the state's interned labels (rows without a node
    answer False; the kernel never considers them).
    """

    def label_in(self, key: str, values: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Rows whose label ``key`` holds one of ``values``."""
        ...

    def has_label(self, key: str) -> npt.NDArray[np.bool_]:
        """Rows that carry label ``key``."""
        ...

    def node_names(self) -> Sequence[str | None]:
        """Each row's node name (None: a row without a node)."""
        ...

    def name_in(self, names: Set[str]) -> npt.NDArray[np.bool_]:
        """Rows whose node's name is one of ``names``."""
        ...

    def labels_of(self, row: int) -> Mapping[str, str]:
        """One row's node labels (read-only), for a filter that checks node by node."""
        ...

    def labels_match(self, selector: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """Rows whose labels match a node selector (``nodeSelectorTerms``, ORed) when the
        node is known by its labels alone (a ``matchFields`` term sees an empty name), as
        a PersistentVolume's node affinity is checked upstream."""
        ...

    def term_match(self, term: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """Rows matching one node selector term (its requirements ANDed, ``matchFields``
        on the node's name; an empty term matches nothing), as a preferred scheduling
        term's preference is matched."""
        ...

    def taint_keys(self) -> Set[str]:
        """The keys of every taint some row carries."""
        ...

    def image_rows(self, image: str) -> tuple[npt.NDArray[np.int64], int, int]:
        """The rows whose node holds ``image`` (a name as the nodes report it), the image's
        size in bytes (the first reporting node's, upstream's image state) and how many of
        the cluster's nodes hold it (0, with no rows: none does)."""
        ...

    def node_count(self) -> int:
        """How many nodes the cluster has (rows without a node do not count)."""
        ...

    def taint_counts(
        self, counted: Callable[[tuple[str, str, str]], bool]
    ) -> npt.NDArray[np.int64]:
        """Per row, how many of its taints (key, value, effect) ``counted`` holds."""
        ...

    def unschedulable(self) -> npt.NDArray[np.bool_]:
        """Rows whose node is cordoned (``spec.unschedulable``)."""
        ...


class PodClass(Protocol):
    """What the pods of one equivalence class share (``core.encode.ClassInfo``)."""

    namespace: str
    label_map: dict[str, str]
    spec: Mapping[str, Any]
    # DynamicResources' cycle state of the class's one pod with resource claims, when the
    # caller places it with its devices (``core.dra.pod.PodDevices``); else None
    devices: Any


# A static filter: (its args, the nodes, a class of pods) -> the rows that pass it. It is
# called once per class and burst, never per node or per pod.
StaticFilter = Callable[[Any, NodeTable, PodClass], npt.NDArray[np.bool_]]
# A static score: (its args, the nodes, a class of pods) -> each row's score, already in
# [0, MAX_NODE_SCORE] and final: it depends on no other node, so no normalisation over the
# feasible nodes follows (the kernel adds it, weighted, to the class's fixed scores).
# Called once per class and burst, like a static filter.
StaticScore = Callable[[Any, NodeTable, PodClass], npt.NDArray[np.integer[Any]]]


class Normalise(Enum):
    """How the kernel turns a score channel's raw values into scores in 0..100.

    ``MAX``: 100 * x // m, m the largest raw value over the pod's feasible nodes (every
    node 0 when m is 0), kube-scheduler's DefaultNormalizeScore; ``REVERSE_MAX``: 100 -
    100 * x // m (every node 100 when m is 0), the reversed one; ``NONE``: the raw values
    are the scores already (in 0..100, checked), added to the class's fixed scores.
    """

    NONE = "None"
    MAX = "Max"
    REVERSE_MAX = "ReverseMax"


# A channel's raw values: (its args, the nodes, a class of pods) -> one non-negative
# integer per row. Called once per class and burst (and cached by ``key``).
ScoreRaw = Callable[[Any, NodeTable, PodClass], npt.NDArray[np.integer[Any]]]
# The part of a class that a channel's raw values depend on (encodable as JSON): classes
# with equal keys share one row of raw values.
ScoreKey = Callable[[Any, NodeTable, PodClass], Any]


@dataclass(frozen=True)
class ScoreChannel:
    """A score plugin's per-class contribution: raw values per node and their normalisation.

    The encoder gathers the channels of a profile's enabled score plugins from the
    registry and calls ``raw`` once per distinct ``key`` (None: the whole class is the
    key), after the class's filters (static rows); the kernel normalises the values over
    each pod's feasible nodes as ``normalise`` says and adds them with the plugin's weight.
    ``reads``: the spec field the key reads (empty: any); classes whose spec lacks it share
    one key without a call, which spares a burst of many classes a call per class.
    """

    normalise: Normalise
    raw: ScoreRaw
    key: ScoreKey | None = None
    reads: str = ""


# A filter mask's answer: (its args, the nodes, a class of pods) -> the rows failing it, or
# None when no row does.
MaskFn = Callable[[Any, NodeTable, PodClass], "npt.NDArray[np.bool_] | None"]


@dataclass(frozen=True)
class FilterMask:
    """One reason of a filter whose answer depends on the nodes and the pod's signature.

    The encoder asks the masks of a profile's filter plugins once per distinct ``key``
    (None: the whole class) and per burst, in the order the plugin lists them; a row counts
    under the first reason that fails it (the plugin's reason code). ``signature``: the
    rows depend on the pod only through what the encoder's static rows already tell apart
    (``spec.nodeName``, ``spec.nodeSelector``, required node affinity, tolerations), so
    the key need not split them further; otherwise the key joins the static row's key.
    """

    reason: str
    failing: MaskFn
    key: ScoreKey | None = None
    signature: bool = False


@dataclass(frozen=True)
class ClassFilterResult:
    """What a class filter's PreFilter and Filter say for one class of pods.

    ``prefilter_message``: the PreFilter rejects the pod before any node is tried
    (UnschedulableAndUnresolvable, the message replacing the node counts); ``error``: the
    attempt fails with this error; else ``failing``: per reason text of the plugin, in the
    order its Filter checks them, the rows failing with it (a row counts under the first
    reason that holds it; one Filter status per node, as upstream returns one).
    ``scores``: the plugin's Score per row, 0..100 and final (no NormalizeScore), when it
    scores the class from what its Filter found (VolumeBinding's capacity score); the
    encoder adds it, weighted, to the class's fixed scores.
    """

    prefilter_message: str = ""
    error: str = ""
    failing: tuple[tuple[str, npt.NDArray[np.bool_]], ...] = ()
    scores: npt.NDArray[np.int64] | None = None


# A class filter: (its args, the nodes, a class of pods, the cluster's objects it reads)
# -> its answer, or None when the plugin has nothing to check for the class (upstream's
# PreFilter Skip). Called once per class and burst, and only for classes whose spec holds
# the field the plugin names (``class_filter_reads``): other pods pay nothing.
ClassFilter = Callable[[Any, NodeTable, PodClass, Any], "ClassFilterResult | None"]


@dataclass(frozen=True)
class PreFilterResult:
    """What a plugin's PreFilter says of a class of pods.

    ``message``: it rejects the pod on every node (UnschedulableAndUnresolvable; the
    PreFilter run ends); ``error``: the attempt fails with this error; else ``keep``: the
    only rows its Filter may pass (upstream's PreFilterResult.NodeNames; None: every row).
    """

    message: str = ""
    error: str = ""
    keep: npt.NDArray[np.bool_] | None = None


class ParsedPodClass(PodClass, Protocol):
    """A class as the encoder hands it to PreFilters: with what it parses once per class
    for the kernel's dynamic terms, whose plugins' PreFilters check it."""

    @property
    def spread_selectors(self) -> Sequence[tuple[Any, str | None]]:
        """Each spec.topologySpreadConstraints entry's labelSelector, parsed, and its
        error (None: it parses)."""

    @property
    def spread_invalid(self) -> bool:
        """Whether one of ``spread_selectors`` has an error."""

    @property
    def affinity_error(self) -> str | None:
        """The first error of its pod (anti-)affinity terms (None: they parse, or there
        are none)."""


# A PreFilter: (its args, the nodes, a class of pods) -> its answer, or None when it has
# nothing to say of the class (every row stays).
PreFilterFn = Callable[[Any, NodeTable, ParsedPodClass], "PreFilterResult | None"]


@dataclass(frozen=True)
class PreFilter:
    """A plugin's PreFilter, asked by the encoder once per class of pods whose spec holds
    ``reads`` (other classes pay nothing), in the profile's filter order beside the
    kernel's own PreFilters; the first rejection or error ends the run. ``narrows``: it
    may answer ``keep``; the rows left out are counted under the kernel's narrowing code,
    whose text names the narrowing plugin (NodeAffinity: the only one kube-scheduler's
    plugins have, which tests/core/plugins/test_registry.py holds), and the kept rows
    depend on the pod only through the static rows' signature."""

    run: PreFilterFn
    reads: str
    narrows: bool = False


# A PreScore check: (its args, the nodes, a class of pods) -> the error that fails the
# attempts of the class's pods at PreScore, or None.
PreScoreFn = Callable[[Any, NodeTable, ParsedPodClass], "str | None"]


@dataclass(frozen=True)
class PreScore:
    """A plugin's PreScore check of a class of pods (kube-scheduler's PreScore that fails
    with an error, as PodTopologySpread's and InterPodAffinity's do for a pod whose own
    selectors do not parse): asked by the encoder once per class whose spec holds
    ``reads`` and whose attempt no PreFilter ended, in the profile's score order; the first
    error fails the attempts of the class's pods, after the nodes were filtered."""

    run: PreScoreFn
    reads: str


@dataclass(frozen=True)
class NodeFilterResult:
    """A node filter's answer for its rows: per reason text, in the order the plugin
    checks them, the rows failing with it; or ``error``, which fails the attempt."""

    failing: tuple[tuple[str, npt.NDArray[np.bool_]], ...] = ()
    error: str = ""


# A node filter: (its args, the nodes, a class of pods, the rows every earlier filter
# passed; read-only) -> its answer, or None when it has nothing to check for the class.
NodeFilterFn = Callable[
    [Any, NodeTable, PodClass, npt.NDArray[np.bool_]], "NodeFilterResult | None"
]


@dataclass(frozen=True)
class NodeFilter:
    """A filter run node by node on the rows the earlier filters passed, for a class
    whose answer is its own (DynamicResources: its one pod's allocations), as upstream
    runs a node's filters in order and stops at the first failure: the search is costly,
    and an error on a node an earlier filter rejected would never be seen. Asked for
    classes whose spec holds ``reads``; ``reasons``: the texts its answers use, each
    counted under a reason code (those with a fixed code keep it)."""

    run: NodeFilterFn
    reads: str
    reasons: tuple[str, ...]


# --- one pod, node by node (core/pernode) ------------------------------------------------

# A per-node filter: (the evaluator asking, ``core/pernode/evaluator.PodEvaluator``: its
# ``profile``, ``snapshot``, ``storage`` and the pods' device state; a pod) -> the plugin
# for the pod's cycle (its constructor is the PreFilter; it then answers ``filter(node)``),
# or None when it has nothing to check for the pod (upstream's PreFilter Skip).
PerNodeFilter = Callable[[Any, Any], Any]
# A per-node score: (the evaluator, a pod, the feasible NodeInfos) -> each node's score,
# normalised to 0..100 and not yet weighted, or None when it scores nothing for the pod.
PerNodeScore = Callable[[Any, Any, list[Any]], "dict[str, int] | None"]


@dataclass(frozen=True)
class PerNode:
    """A plugin's Filter and Score written for one pod, node by node (its ``core/pernode``
    module): what the per-node evaluator runs for preemption's dry run, the queueing
    hints, ``explain``, the web view and the tests' oracle. A static filter, static score
    or score channel needs none: the evaluator runs the spec's own function over the
    pod's nodes."""

    filter: PerNodeFilter | None = None
    score: PerNodeScore | None = None


# --- the registry's entry ---------------------------------------------------------------


@dataclass(frozen=True)
class PluginSpec:
    """One plugin as the registry knows it.

    ``args``: its args model (None: it takes no args); ``reasons``: its fixed failure texts
    with their status codes; ``events``: the cluster events that can make a pod it
    rejected schedulable (empty: it never rejects, or nothing outside can help).
    ``static_filter``: for a filter whose answer depends only on the nodes' labels and the
    pod's signature, the function the encoder calls (its single reason is its text); the
    filters kube-scheduler ships are encoded by ``core/encode.py`` and the kernels instead.
    ``static_score``: likewise for a score whose value on a node depends only on that
    node's labels and the pod's signature. The same functions, run over one pod's nodes,
    are what the per-node evaluator runs for the tests' oracle, preemption's dry run
    and ``explain`` (``core/pernode/static_plugins.py``).
    ``score_channel``: a score computed per class by the module (raw values per node) and
    normalised by the kernel over the feasible nodes (:class:`ScoreChannel`).
    ``filter_masks``: a filter's per-class answers, one per reason (:class:`FilterMask`).
    ``pre_filter``: its PreFilter for a class (:class:`PreFilter`); ``pre_score``: its
    PreScore's error for a class (:class:`PreScore`); ``node_filter``: a
    filter run node by node on the rows still passing (:class:`NodeFilter`).
    ``class_filter``: for a filter that also reads cluster objects (the volume filters read
    the storage objects of ``ClusterState.storage``) and may reject at PreFilter, the
    function the encoder calls for classes whose spec holds ``class_filter_reads``; each of
    its ``reasons`` gets a reason code.
    ``named_only``: points among ``points`` that ``multiPoint`` does not expand into: the
    plugin runs there only where a profile names it at the point (an upstream release
    later than v1.34 added it there; kubesalvo's defaults stay v1.34's).
    ``args_reader``: reads its args from a ``pluginConfig`` document (``(decoder, raw,
    path) -> args``, written against ``core/args_reading.py``; None: an args model of plain
    values, read field by field); ``profile_field``: the ``Profile`` field the kernels read
    its args from ("": they are kept in ``Profile.plugin_args``).
    ``kernel_codes``: its reasons the kernels (or its filter masks) count under a fixed
    code of their own rather than an extension code: reason text -> the code's name in
    ``core/_codes.pxd`` (``reasons.FIXED_REASONS`` gathers them).
    ``sort_key``: a queue sort's key of a queued pod (``sched/queue``'s ``QueuedPod``: its
    ``priority``, ``timestamp`` and ``pod``); smaller keys pop first.
    ``queueing_hint``: loads its queueing hint (:data:`HintFn`: whether one of its
    ``events`` can help a pod it rejected; without one, every such event does). A loader,
    as a hint reads the plugin's per-node logic (core/pernode), which imports the plugin's
    module; the registry loads each once (``registry.queueing_hints``).
    ``per_node``: loads its :class:`PerNode` Filter and Score (a loader for the same
    reason; ``registry.per_node`` gathers them). Every filter or score plugin has one, or
    a static function the evaluator runs instead (tests/core/plugins/test_registry.py).
    """

    name: str
    points: frozenset[str]
    args: type | None = None
    reasons: Mapping[str, Code] = field(default_factory=dict)
    events: tuple[ClusterEvent, ...] = ()
    static_filter: StaticFilter | None = None
    class_filter: ClassFilter | None = None
    class_filter_reads: str = ""
    static_score: StaticScore | None = None
    score_channel: ScoreChannel | None = None
    filter_masks: tuple[FilterMask, ...] = ()
    pre_filter: PreFilter | None = None
    pre_score: PreScore | None = None
    node_filter: NodeFilter | None = None
    named_only: frozenset[str] = frozenset()
    queueing_hint: Callable[[], HintFn] | None = None
    args_reader: Callable[[Any, Any, str], Any] | None = None
    kernel_codes: Mapping[str, str] = field(default_factory=dict)
    sort_key: Callable[[Any], tuple[Any, ...]] | None = None
    profile_field: str = ""
    per_node: Callable[[], PerNode] | None = None

    def __post_init__(self) -> None:
        if (self.args_reader is not None or self.profile_field) and self.args is None:
            raise ValueError(f"{self.name} takes no args to read or keep")
        if self.sort_key is not None and QUEUE_SORT not in self.points:
            raise ValueError(f"sort key of {self.name} must implement the queueSort point")
        narrowed = prefilter_narrowing_reason([self.name])
        for text in self.kernel_codes:
            if text not in self.reasons and text != narrowed:
                raise ValueError(f"kernel code of {self.name}: {text!r} is not its reason")
        if self.queueing_hint is not None and not self.events:
            raise ValueError(f"queueing hint of {self.name}: it registers no events")
        if self.static_filter is not None and len(self.reasons) != 1:
            raise ValueError(f"static filter {self.name} needs exactly one reason text")
        if self.class_filter is not None and not self.class_filter_reads:
            raise ValueError(f"class filter {self.name} must name the spec field it reads")
        if self.static_score is not None and SCORE not in self.points:
            raise ValueError(f"static score {self.name} must implement the score point")
        if self.score_channel is not None and SCORE not in self.points:
            raise ValueError(f"score channel {self.name} must implement the score point")
        for mask in self.filter_masks:
            if mask.reason not in self.reasons or FILTER not in self.points:
                raise ValueError(f"filter mask of {self.name}: {mask.reason!r} is not its reason")
        if self.pre_filter is not None and PRE_FILTER not in self.points:
            raise ValueError(f"PreFilter of {self.name} must implement the preFilter point")
        if self.pre_score is not None and not {PRE_SCORE, SCORE} <= self.points:
            raise ValueError(f"PreScore of {self.name} must implement preScore and score")
        if self.node_filter is not None and not (
            FILTER in self.points and set(self.node_filter.reasons) <= set(self.reasons)
        ):
            raise ValueError(f"node filter of {self.name}: its reasons must be its own")
        if self.score_channel is not None and self.static_score is not None:
            raise ValueError(f"score {self.name} is a static score or a channel, not both")
        if self.per_node is not None and not {FILTER, SCORE} & self.points:
            raise ValueError(f"per-node logic of {self.name}: it has no filter or score point")
        if not self.named_only <= self.points:
            raise ValueError(f"{self.name}: named-only points must be among its points")


# --- texts of the framework (rendered at the edge) --------------------------------------

NO_NODE_AVAILABLE = "0/{} nodes are available"
SUCCESSFULLY_ASSIGNED = "Successfully assigned {}/{} to {}"
# schedulePod's error when the snapshot has no node at all: before any plugin runs, the
# attempt fails with it (an error, not a fit error: no "0/0 nodes are available").
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
# A PostFilter plugin whose PreFilter never ran for the pod (a PreFilter before it answered
# UnschedulableAndUnresolvable, which ends the PreFilter run): reading its cycle state
# fails with the framework's ErrNotFound, an error that ends the PostFilter run and is its
# whole message.
CYCLE_STATE_NOT_FOUND = "not found"


def prefilter_narrowing_reason(plugins: list[str] | tuple[str, ...]) -> str:
    """The reason given to nodes a PreFilter left out (e.g. NodeAffinity's metadata.name).

    Upstream writes the plugin set with Go's slice format: "[NodeAffinity]".
    """
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def fit_error_message(
    num_nodes: int,
    reason_counts: Mapping[str, int],
    *,
    prefilter_message: str = "",
    postfilter_message: str = "",
) -> str:
    """The FailedScheduling text: "0/<n> nodes are available: <counts>. <post-filter>".

    As upstream's ``FitError.Error()``: one "<count> <reason>" entry per distinct reason,
    sorted as strings (so "10 ..." sorts before "9 ..."), joined by ", ", closed by a
    period. ``reason_counts`` maps each reason to the number of nodes that gave it (a node
    rejected for two resources counts once under each). When a PreFilter rejected the
    pod, its message replaces the counts, as upstream avoids repeating it per node.
    """
    message = NO_NODE_AVAILABLE.format(num_nodes) + ":"
    if prefilter_message:
        message += f" {prefilter_message}."
    else:
        entries = sorted(f"{count} {reason}" for reason, count in reason_counts.items() if count)
        if entries:
            message += f" {', '.join(entries)}."
    if postfilter_message:
        message += f" {postfilter_message}"
    return message


def post_filter_message(*reasons: str) -> str:
    """The PostFilter plugins' reasons as kube-scheduler joins them (Status.Message)."""
    return ", ".join(r for r in reasons if r)


def success_message(namespace: str, pod: str, node: str) -> str:
    """The Scheduled event text: "Successfully assigned <ns>/<pod> to <node>"."""
    return SUCCESSFULLY_ASSIGNED.format(namespace, pod, node)
